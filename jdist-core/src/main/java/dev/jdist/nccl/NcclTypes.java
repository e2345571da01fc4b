package dev.jdist.nccl;

import dev.jdist.DType;
import dev.jdist.ReduceOp;

/** The dtype and reduction tables of docs/reference/collectives.md §6.4. */
final class NcclTypes {

    private NcclTypes() {}

    /**
     * {@code ncclDataType_t} for {@code dtype}.
     *
     * @throws IllegalArgumentException for bool, int16, uint16 and complex64, which NCCL cannot reduce or move
     */
    static int dataType(DType dtype, String op) {
        return switch (dtype) {
            case INT8 -> 0;
            case UINT8 -> 1;
            case INT32 -> 2;
            case UINT32 -> 3;
            case INT64 -> 4;
            case UINT64 -> 5;
            case FLOAT16 -> 6;
            case FLOAT32 -> 7;
            case FLOAT64 -> 8;
            case BFLOAT16 -> 9;
            case BOOL, INT16, UINT16, COMPLEX64 -> throw new IllegalArgumentException(
                    "the nccl backend does not support dtype " + dtype + " (" + op + "); NCCL handles int8, uint8, "
                    + "int32, uint32, int64, uint64, float16, float32, float64 and bfloat16 — convert the array "
                    + "first, or use the ring backend");
        };
    }

    /** {@code ncclRedOp_t} for {@code op}. */
    static int redOp(ReduceOp op) {
        return switch (op) {
            case SUM -> NcclApi.SUM;
            case MAX -> NcclApi.MAX;
            case MIN -> NcclApi.MIN;
        };
    }
}
