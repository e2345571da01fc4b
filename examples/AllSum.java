import dev.jdist.Array;
import dev.jdist.DType;
import dev.jdist.Distributed;
import dev.jdist.Group;

/** The hello-world of jdist: every rank contributes ones(10); every rank prints the sum (= the group size). */
public class AllSum {
    public static void main(String[] args) {
        Group world = Distributed.init();
        Array x = world.allSum(Array.ones(DType.FLOAT32, 10));
        System.out.print(world.rank() + " " + x + "\n");   // one write: whole lines under jdist launch
    }
}
