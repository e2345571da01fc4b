package dev.jdist.testing;

import java.lang.reflect.Method;

/**
 * The training run of {@link ChildAotCache}: one rank of a two-rank job (MLX_RANK, MLX_HOSTFILE, a job token) that
 * starts jdist and calls the collectives most test programs call, for every dtype, so that the classes a test rank loads
 * are in the cache. Calls jdist by name: this module cannot depend on jdist-core (jdist-core's tests depend on it), and
 * the cache is only made where jdist-core is on the class path.
 */
public final class AotTraining {
    private AotTraining() {}

    public static void main(String[] args) throws Exception {
        Class<?> distributed = Class.forName("dev.jdist.Distributed");
        Class<?> group = Class.forName("dev.jdist.Group");
        Class<?> array = Class.forName("dev.jdist.Array");
        Class<?> dtype = Class.forName("dev.jdist.DType");
        Object world = distributed.getMethod("init").invoke(null);
        Method ones = array.getMethod("ones", dtype, int[].class);
        for (Object t : dtype.getEnumConstants()) {
            Object x = ones.invoke(null, t, new int[] {1024});
            for (String op : new String[] {"allSum", "allMax", "allMin", "allGather", "sumScatter"}) {
                group.getMethod(op, array).invoke(world, x);
            }
            group.getMethod("broadcast", array, int.class).invoke(world, x, 0);
            group.getMethod("allToAll", array).invoke(world, x);
        }
        group.getMethod("barrier").invoke(world);
        System.out.println("aot training: rank " + group.getMethod("rank").invoke(world) + " done");
    }
}
