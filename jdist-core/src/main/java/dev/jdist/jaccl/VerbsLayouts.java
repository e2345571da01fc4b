package dev.jdist.jaccl;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;

import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The C structures of {@code <infiniband/verbs.h>} that the binding touches, as FFM layouts for the
 * LP64 ABI (Linux x86-64 and aarch64; rdma-core). Member names equal the C member names so that
 * {@code VerbsLayoutsTest} can compile a C program printing {@code offsetof}/{@code sizeof} of every
 * named member and compare. Members the binding never touches are padding. Reference: docs/reference/collectives.md §4.9.
 */
public final class VerbsLayouts {
    private VerbsLayouts() {}

    /** {@code union ibv_gid}: 16 raw bytes. */
    public static final MemoryLayout IBV_GID = MemoryLayout.sequenceLayout(16, JAVA_BYTE);

    /** {@code struct ibv_context}: the device pointer and the ops table with the inline hot-path calls. */
    public static final StructLayout IBV_CONTEXT_OPS = MemoryLayout.structLayout(
            paddingLayout(88),
            ADDRESS.withName("poll_cq"),
            paddingLayout(104),
            ADDRESS.withName("post_send"),
            ADDRESS.withName("post_recv"),
            paddingLayout(40)).withName("ibv_context_ops");

    public static final StructLayout IBV_CONTEXT = MemoryLayout.structLayout(
            ADDRESS.withName("device"),
            IBV_CONTEXT_OPS.withName("ops"),
            paddingLayout(64)).withName("ibv_context");

    public static final StructLayout IBV_PD = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            paddingLayout(8)).withName("ibv_pd");

    public static final StructLayout IBV_CQ = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            paddingLayout(120)).withName("ibv_cq");

    public static final StructLayout IBV_QP = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            paddingLayout(40),
            JAVA_INT.withName("handle"),
            JAVA_INT.withName("qp_num"),
            JAVA_INT.withName("state"),
            JAVA_INT.withName("qp_type"),
            paddingLayout(96)).withName("ibv_qp");

    public static final StructLayout IBV_MR = MemoryLayout.structLayout(
            ADDRESS.withName("context"),
            ADDRESS.withName("pd"),
            ADDRESS.withName("addr"),
            JAVA_LONG.withName("length"),
            JAVA_INT.withName("handle"),
            JAVA_INT.withName("lkey"),
            JAVA_INT.withName("rkey"),
            paddingLayout(4)).withName("ibv_mr");

    public static final StructLayout IBV_QP_CAP = MemoryLayout.structLayout(
            JAVA_INT.withName("max_send_wr"),
            JAVA_INT.withName("max_recv_wr"),
            JAVA_INT.withName("max_send_sge"),
            JAVA_INT.withName("max_recv_sge"),
            JAVA_INT.withName("max_inline_data")).withName("ibv_qp_cap");

    public static final StructLayout IBV_QP_INIT_ATTR = MemoryLayout.structLayout(
            ADDRESS.withName("qp_context"),
            ADDRESS.withName("send_cq"),
            ADDRESS.withName("recv_cq"),
            ADDRESS.withName("srq"),
            IBV_QP_CAP.withName("cap"),
            JAVA_INT.withName("qp_type"),
            JAVA_INT.withName("sq_sig_all"),
            paddingLayout(4)).withName("ibv_qp_init_attr");

    public static final StructLayout IBV_GLOBAL_ROUTE = MemoryLayout.structLayout(
            IBV_GID.withName("dgid"),
            JAVA_INT.withName("flow_label"),
            JAVA_BYTE.withName("sgid_index"),
            JAVA_BYTE.withName("hop_limit"),
            JAVA_BYTE.withName("traffic_class"),
            paddingLayout(1)).withName("ibv_global_route");

    public static final StructLayout IBV_AH_ATTR = MemoryLayout.structLayout(
            IBV_GLOBAL_ROUTE.withName("grh"),
            JAVA_SHORT.withName("dlid"),
            JAVA_BYTE.withName("sl"),
            JAVA_BYTE.withName("src_path_bits"),
            JAVA_BYTE.withName("static_rate"),
            JAVA_BYTE.withName("is_global"),
            JAVA_BYTE.withName("port_num"),
            paddingLayout(1)).withName("ibv_ah_attr");

    public static final StructLayout IBV_QP_ATTR = MemoryLayout.structLayout(
            JAVA_INT.withName("qp_state"),
            JAVA_INT.withName("cur_qp_state"),
            JAVA_INT.withName("path_mtu"),
            JAVA_INT.withName("path_mig_state"),
            JAVA_INT.withName("qkey"),
            JAVA_INT.withName("rq_psn"),
            JAVA_INT.withName("sq_psn"),
            JAVA_INT.withName("dest_qp_num"),
            JAVA_INT.withName("qp_access_flags"),
            IBV_QP_CAP.withName("cap"),
            IBV_AH_ATTR.withName("ah_attr"),
            IBV_AH_ATTR.withName("alt_ah_attr"),
            JAVA_SHORT.withName("pkey_index"),
            JAVA_SHORT.withName("alt_pkey_index"),
            JAVA_BYTE.withName("en_sqd_async_notify"),
            JAVA_BYTE.withName("sq_draining"),
            JAVA_BYTE.withName("max_rd_atomic"),
            JAVA_BYTE.withName("max_dest_rd_atomic"),
            JAVA_BYTE.withName("min_rnr_timer"),
            JAVA_BYTE.withName("port_num"),
            JAVA_BYTE.withName("timeout"),
            JAVA_BYTE.withName("retry_cnt"),
            JAVA_BYTE.withName("rnr_retry"),
            JAVA_BYTE.withName("alt_port_num"),
            JAVA_BYTE.withName("alt_timeout"),
            paddingLayout(1),
            JAVA_INT.withName("rate_limit"),
            paddingLayout(4)).withName("ibv_qp_attr");

    /** {@code struct ibv_port_attr} (rdma-core ≥ 17; the exported ibv_query_port fills the legacy prefix). */
    public static final StructLayout IBV_PORT_ATTR = MemoryLayout.structLayout(
            JAVA_INT.withName("state"),
            JAVA_INT.withName("max_mtu"),
            JAVA_INT.withName("active_mtu"),
            JAVA_INT.withName("gid_tbl_len"),
            JAVA_INT.withName("port_cap_flags"),
            JAVA_INT.withName("max_msg_sz"),
            JAVA_INT.withName("bad_pkey_cntr"),
            JAVA_INT.withName("qkey_viol_cntr"),
            JAVA_SHORT.withName("pkey_tbl_len"),
            JAVA_SHORT.withName("lid"),
            JAVA_SHORT.withName("sm_lid"),
            JAVA_BYTE.withName("lmc"),
            JAVA_BYTE.withName("max_vl_num"),
            JAVA_BYTE.withName("sm_sl"),
            JAVA_BYTE.withName("subnet_timeout"),
            JAVA_BYTE.withName("init_type_reply"),
            JAVA_BYTE.withName("active_width"),
            JAVA_BYTE.withName("active_speed"),
            JAVA_BYTE.withName("phys_state"),
            JAVA_BYTE.withName("link_layer"),
            JAVA_BYTE.withName("flags"),
            JAVA_SHORT.withName("port_cap_flags2"),
            paddingLayout(2)).withName("ibv_port_attr");

    public static final StructLayout IBV_SGE = MemoryLayout.structLayout(
            JAVA_LONG.withName("addr"),
            JAVA_INT.withName("length"),
            JAVA_INT.withName("lkey")).withName("ibv_sge");

    /** {@code struct ibv_send_wr}: the members of a plain SEND; the {@code wr}/{@code qp_type}/{@code bind_mw} unions are padding (zeroed). */
    public static final StructLayout IBV_SEND_WR = MemoryLayout.structLayout(
            JAVA_LONG.withName("wr_id"),
            ADDRESS.withName("next"),
            ADDRESS.withName("sg_list"),
            JAVA_INT.withName("num_sge"),
            JAVA_INT.withName("opcode"),
            JAVA_INT.withName("send_flags"),
            JAVA_INT.withName("imm_data"),
            paddingLayout(88)).withName("ibv_send_wr");

    public static final StructLayout IBV_RECV_WR = MemoryLayout.structLayout(
            JAVA_LONG.withName("wr_id"),
            ADDRESS.withName("next"),
            ADDRESS.withName("sg_list"),
            JAVA_INT.withName("num_sge"),
            paddingLayout(4)).withName("ibv_recv_wr");

    public static final StructLayout IBV_WC = MemoryLayout.structLayout(
            JAVA_LONG.withName("wr_id"),
            JAVA_INT.withName("status"),
            JAVA_INT.withName("opcode"),
            JAVA_INT.withName("vendor_err"),
            JAVA_INT.withName("byte_len"),
            JAVA_INT.withName("imm_data"),
            JAVA_INT.withName("qp_num"),
            JAVA_INT.withName("src_qp"),
            JAVA_INT.withName("wc_flags"),
            JAVA_SHORT.withName("pkey_index"),
            JAVA_SHORT.withName("slid"),
            JAVA_BYTE.withName("sl"),
            JAVA_BYTE.withName("dlid_path_bits"),
            paddingLayout(2)).withName("ibv_wc");

    /** Every struct the binding uses, for the header check; the key is the C type. */
    public static final java.util.Map<String, StructLayout> ALL = java.util.Map.ofEntries(
            java.util.Map.entry("struct ibv_context", IBV_CONTEXT),
            java.util.Map.entry("struct ibv_pd", IBV_PD),
            java.util.Map.entry("struct ibv_cq", IBV_CQ),
            java.util.Map.entry("struct ibv_qp", IBV_QP),
            java.util.Map.entry("struct ibv_mr", IBV_MR),
            java.util.Map.entry("struct ibv_qp_cap", IBV_QP_CAP),
            java.util.Map.entry("struct ibv_qp_init_attr", IBV_QP_INIT_ATTR),
            java.util.Map.entry("struct ibv_global_route", IBV_GLOBAL_ROUTE),
            java.util.Map.entry("struct ibv_ah_attr", IBV_AH_ATTR),
            java.util.Map.entry("struct ibv_qp_attr", IBV_QP_ATTR),
            java.util.Map.entry("struct ibv_port_attr", IBV_PORT_ATTR),
            java.util.Map.entry("struct ibv_sge", IBV_SGE),
            java.util.Map.entry("struct ibv_send_wr", IBV_SEND_WR),
            java.util.Map.entry("struct ibv_recv_wr", IBV_RECV_WR),
            java.util.Map.entry("struct ibv_wc", IBV_WC));

    /** Byte offset of a (possibly nested, dot-separated) member. */
    public static long offset(StructLayout layout, String path) {
        String[] parts = path.split("\\.");
        MemoryLayout.PathElement[] elements = new MemoryLayout.PathElement[parts.length];
        for (int i = 0; i < parts.length; i++) elements[i] = MemoryLayout.PathElement.groupElement(parts[i]);
        return layout.byteOffset(elements);
    }

}
