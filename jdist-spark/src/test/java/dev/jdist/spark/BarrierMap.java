package dev.jdist.spark;

import org.apache.spark.api.java.JavaRDD;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;
import scala.runtime.AbstractFunction1;

import java.io.Serializable;
import java.util.Collections;

/** The low-level way a Spark user starts a barrier stage from Java: rdd.barrier().mapPartitions with a Scala function. */
final class BarrierMap {
    private BarrierMap() {}

    /** What one barrier task does with its partition's rows. */
    @FunctionalInterface
    interface Body<T, R> extends Serializable {
        R apply(java.util.Iterator<T> rows) throws Exception;
    }

    /** One result per partition, from a barrier stage; {@code rdd.barrier().mapPartitions(...)}. */
    @SuppressWarnings("unchecked")
    static <T, R> JavaRDD<R> barrierMap(JavaRDD<T> data, Body<T, R> body) {
        ClassTag<R> tag = (ClassTag<R>) ClassTag$.MODULE$.apply(Object.class);
        return new JavaRDD<>(data.rdd().barrier().mapPartitions(new Fn<>(body), false, tag), tag);
    }

    private static final class Fn<T, R> extends AbstractFunction1<Iterator<T>, Iterator<R>> implements Serializable {
        private final Body<T, R> body;

        Fn(Body<T, R> body) { this.body = body; }

        @Override
        public Iterator<R> apply(Iterator<T> rows) {
            try {
                return CollectionConverters.asScala(Collections.singletonList(body.apply(CollectionConverters.asJava(rows))).iterator());
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }
    }
}
