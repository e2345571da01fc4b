/*
 * A fake libibverbs for jdist's tests: the exported symbols JACCL binds plus an ops table with
 * post_send/post_recv/poll_cq, compiled against the installed rdma-core headers (so the real struct
 * layouts are used). Queue pairs of all "devices" in this process form one fabric: a SEND is matched
 * to the receive queue of the QP whose number the sender was connected to (dest_qp_num), whole
 * buffers, FIFO per QP, completions with status. Every call checks its arguments against what the
 * JACCL reference (docs/reference/collectives.md 4.3/4.4) prescribes and records violations, which the test reads with
 * fake_violations().
 */
#include <infiniband/verbs.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr

#define NDEV 4
#define MAXQP 1024
#define MAXMR 8192
#define QDEPTH 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device devices[NDEV];
static int initialised;
static char violations[8192];
static int next_qpn = 100;
static unsigned next_lkey = 1000;

static void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#include <stdarg.h>
static void violation(const char *fmt, ...) {
    size_t used = strlen(violations);
    if (used + 200 > sizeof violations) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(violations + used, sizeof violations - used - 2, fmt, ap);
    va_end(ap);
    strcat(violations, "\n");
}

const char *fake_violations(void) { return violations; }

struct wr { uint64_t wr_id; uint64_t addr; uint32_t len; };

struct fake_cq {
    struct ibv_cq cq;
    struct ibv_wc wc[QDEPTH * 2];
    int head, count;
};

struct fake_qp {
    struct ibv_qp qp;
    struct fake_cq *cq;
    int in_use;
    uint32_t dest_qpn, rq_psn, sq_psn;
    struct wr recvs[QDEPTH]; int rhead, rcount;
    struct wr sends[QDEPTH]; int shead, scount;   /* incoming sends waiting for a receive */
    int outstanding_sends, outstanding_recvs;
};

struct fake_mr { struct ibv_mr mr; int in_use; };

static struct fake_qp *qps[MAXQP];
static struct fake_mr *mrs[MAXMR];

static void init_devices(void) {
    if (initialised) return;
    for (int i = 0; i < NDEV; i++) {
        memset(&devices[i], 0, sizeof devices[i]);
        snprintf(devices[i].name, sizeof devices[i].name, "fake%d", i);
    }
    initialised = 1;
}

struct ibv_device **ibv_get_device_list(int *num) {
    pthread_mutex_lock(&mu);
    init_devices();
    struct ibv_device **list = calloc(NDEV + 1, sizeof *list);
    for (int i = 0; i < NDEV; i++) list[i] = &devices[i];
    if (num) *num = NDEV;
    pthread_mutex_unlock(&mu);
    return list;
}

void ibv_free_device_list(struct ibv_device **list) { free(list); }

const char *ibv_get_device_name(struct ibv_device *device) { return device->name; }

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

struct ibv_context *ibv_open_device(struct ibv_device *device) {
    struct ibv_context *ctx = calloc(1, sizeof *ctx);
    ctx->device = device;
    ctx->ops.post_send = fake_post_send;
    ctx->ops.post_recv = fake_post_recv;
    ctx->ops.poll_cq = fake_poll_cq;
    return ctx;
}

int ibv_close_device(struct ibv_context *ctx) { free(ctx); return 0; }

struct ibv_pd *ibv_alloc_pd(struct ibv_context *ctx) {
    struct ibv_pd *pd = calloc(1, sizeof *pd);
    pd->context = ctx;
    return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd) { free(pd); return 0; }

struct ibv_cq *ibv_create_cq(struct ibv_context *ctx, int cqe, void *cq_context, struct ibv_comp_channel *ch, int vec) {
    if (cqe != 64) violation("ibv_create_cq: cqe %d, expected 64", cqe);
    if (cq_context || ch || vec) violation("ibv_create_cq: cq_context/channel/comp_vector must be NULL/NULL/0");
    struct fake_cq *cq = calloc(1, sizeof *cq);
    cq->cq.context = ctx;
    cq->cq.cqe = cqe;
    return &cq->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq) { free(cq); return 0; }

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *a) {
    if (a->send_cq != a->recv_cq) violation("ibv_create_qp: send_cq != recv_cq");
    if (a->srq) violation("ibv_create_qp: srq set");
    if (a->cap.max_send_wr != 32 || a->cap.max_recv_wr != 32 || a->cap.max_send_sge != 1 || a->cap.max_recv_sge != 1 || a->cap.max_inline_data != 0)
        violation("ibv_create_qp: cap %u/%u/%u/%u/%u, expected 32/32/1/1/0", a->cap.max_send_wr, a->cap.max_recv_wr,
                  a->cap.max_send_sge, a->cap.max_recv_sge, a->cap.max_inline_data);
    if (a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_RC) violation("ibv_create_qp: qp_type %d", a->qp_type);
    if (a->sq_sig_all) violation("ibv_create_qp: sq_sig_all %d", a->sq_sig_all);
    pthread_mutex_lock(&mu);
    struct fake_qp *q = calloc(1, sizeof *q);
    q->qp.context = pd->context;
    q->qp.pd = pd;
    q->qp.send_cq = a->send_cq;
    q->qp.recv_cq = a->recv_cq;
    q->qp.qp_type = a->qp_type;
    q->qp.state = IBV_QPS_RESET;
    q->qp.qp_num = next_qpn++;
    q->cq = (struct fake_cq *) a->send_cq;
    q->in_use = 1;
    qps[q->qp.qp_num % MAXQP] = q;
    pthread_mutex_unlock(&mu);
    return &q->qp;
}

int ibv_destroy_qp(struct ibv_qp *qp) {
    pthread_mutex_lock(&mu);
    struct fake_qp *q = (struct fake_qp *) qp;
    q->in_use = 0;
    qps[qp->qp_num % MAXQP] = NULL;
    pthread_mutex_unlock(&mu);
    free(q);
    return 0;
}

static int gid_index_of_ipv4 = 2;

int ibv_query_port(struct ibv_context *ctx, uint8_t port, struct _compat_ibv_port_attr *attr) {
    if (port != 1) violation("ibv_query_port: port %u, expected 1", port);
    struct ibv_port_attr *p = (struct ibv_port_attr *) attr;
    memset(p, 0, offsetof(struct ibv_port_attr, link_layer));
    p->state = IBV_PORT_ACTIVE;
    p->gid_tbl_len = 4;
    p->lid = 0;
    return 0;
}

/* GID table: 0 = IPv6 link-local, 1 = IPv6 global, 2 = ::ffff:10.0.0.(device+1), 3 = zero */
int ibv_query_gid(struct ibv_context *ctx, uint8_t port, int index, union ibv_gid *gid) {
    if (port != 1) violation("ibv_query_gid: port %u", port);
    memset(gid, 0, sizeof *gid);
    int dev = ctx->device->name[4] - '0';
    if (index == 0) { gid->raw[0] = 0xfe; gid->raw[1] = 0x80; gid->raw[15] = (uint8_t) (dev + 1); }
    else if (index == 1) { gid->raw[0] = 0x20; gid->raw[1] = 0x01; gid->raw[15] = (uint8_t) (dev + 1); }
    else if (index == gid_index_of_ipv4) { gid->raw[10] = 0xff; gid->raw[11] = 0xff; gid->raw[12] = 10; gid->raw[15] = (uint8_t) (dev + 1); }
    else if (index > 3) return EINVAL;
    return 0;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
    if (access != (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) violation("ibv_reg_mr: access %d", access);
    if (((uintptr_t) addr) % 4096) violation("ibv_reg_mr: buffer not page-aligned");
    pthread_mutex_lock(&mu);
    struct fake_mr *m = calloc(1, sizeof *m);
    m->mr.pd = pd;
    m->mr.context = pd->context;
    m->mr.addr = addr;
    m->mr.length = length;
    m->mr.lkey = next_lkey++;
    m->in_use = 1;
    mrs[m->mr.lkey % MAXMR] = m;
    pthread_mutex_unlock(&mu);
    return &m->mr;
}

int ibv_dereg_mr(struct ibv_mr *mr) {
    pthread_mutex_lock(&mu);
    mrs[mr->lkey % MAXMR] = NULL;
    pthread_mutex_unlock(&mu);
    free(mr);
    return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask) {
    struct fake_qp *q = (struct fake_qp *) qp;
    int rc_extra_rtr = IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
    int rc_extra_rts = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    int rc = qp->qp_type == IBV_QPT_RC;
    if (a->qp_state == IBV_QPS_INIT) {
        if (qp->state != IBV_QPS_RESET) violation("INIT from state %d", qp->state);
        if (mask != (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) violation("INIT mask 0x%x", mask);
        if (a->port_num != 1 || a->pkey_index != 0) violation("INIT port %u pkey %u", a->port_num, a->pkey_index);
        if (a->qp_access_flags != (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE)) violation("INIT access %d", a->qp_access_flags);
    } else if (a->qp_state == IBV_QPS_RTR) {
        int want = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | (rc ? rc_extra_rtr : 0);
        if (qp->state != IBV_QPS_INIT) violation("RTR from state %d", qp->state);
        if (mask != want) violation("RTR mask 0x%x, expected 0x%x", mask, want);
        if (a->path_mtu != IBV_MTU_1024) violation("RTR path_mtu %d", a->path_mtu);
        if (a->rq_psn != 7) violation("RTR rq_psn %u", a->rq_psn);
        if (a->ah_attr.port_num != 1 || a->ah_attr.sl != 0 || a->ah_attr.src_path_bits != 0) violation("RTR ah port/sl/bits");
        if (!a->ah_attr.is_global || a->ah_attr.grh.hop_limit != 1) violation("RTR: the peer GID has an interface id, so global routing with hop limit 1 is expected");
        if (a->ah_attr.grh.sgid_index != gid_index_of_ipv4) violation("RTR sgid_index %u, expected the IPv4-mapped GID's index %d", a->ah_attr.grh.sgid_index, gid_index_of_ipv4);
        if (a->ah_attr.grh.dgid.raw[10] != 0xff || a->ah_attr.grh.dgid.raw[11] != 0xff) violation("RTR dgid is not IPv4-mapped");
        q->dest_qpn = a->dest_qp_num;
        q->rq_psn = a->rq_psn;
    } else if (a->qp_state == IBV_QPS_RTS) {
        int want = IBV_QP_STATE | IBV_QP_SQ_PSN | (rc ? rc_extra_rts : 0);
        if (qp->state != IBV_QPS_RTR) violation("RTS from state %d", qp->state);
        if (mask != want) violation("RTS mask 0x%x, expected 0x%x", mask, want);
        if (a->sq_psn != 7) violation("RTS sq_psn %u", a->sq_psn);
        q->sq_psn = a->sq_psn;
    } else {
        violation("modify_qp to state %d", a->qp_state);
        return EINVAL;
    }
    qp->state = a->qp_state;
    return 0;
}

static struct fake_mr *check_sge(struct ibv_qp *qp, struct ibv_sge *sge, const char *what) {
    struct fake_mr *m = mrs[sge->lkey % MAXMR];
    if (!m || m->mr.lkey != sge->lkey) { violation("%s: unknown lkey %u", what, sge->lkey); return NULL; }
    if (m->mr.pd != qp->pd) violation("%s: lkey %u belongs to another protection domain", what, sge->lkey);
    if (sge->addr < (uint64_t) (uintptr_t) m->mr.addr || sge->addr + sge->length > (uint64_t) (uintptr_t) m->mr.addr + m->mr.length)
        violation("%s: sge outside its memory region", what);
    if (sge->length != m->mr.length) violation("%s: sge length %u is not the whole frame %zu", what, sge->length, m->mr.length);
    return m;
}

static void push(struct fake_cq *cq, uint64_t wr_id, int status, int opcode, uint32_t len, uint32_t qpn) {
    if (cq->count >= (int) (sizeof cq->wc / sizeof cq->wc[0])) { violation("completion queue overrun"); return; }
    struct ibv_wc *w = &cq->wc[(cq->head + cq->count) % (int) (sizeof cq->wc / sizeof cq->wc[0])];
    memset(w, 0, sizeof *w);
    w->wr_id = wr_id;
    w->status = status;
    w->opcode = opcode;
    w->byte_len = len;
    w->qp_num = qpn;
    cq->count++;
}

static void deliver(struct fake_qp *to) {
    struct fake_qp *from = qps[to->dest_qpn % MAXQP];
    while (to->rcount > 0 && to->scount > 0) {
        struct wr r = to->recvs[to->rhead];
        struct wr s = to->sends[to->shead];
        to->rhead = (to->rhead + 1) % QDEPTH; to->rcount--;
        to->shead = (to->shead + 1) % QDEPTH; to->scount--;
        to->outstanding_recvs--;
        if (from) from->outstanding_sends--;
        if (r.len < s.len) {
            push(to->cq, r.wr_id, IBV_WC_LOC_LEN_ERR, IBV_WC_RECV, 0, to->qp.qp_num);
            if (from) push(from->cq, s.wr_id, IBV_WC_REM_INV_REQ_ERR, IBV_WC_SEND, 0, from->qp.qp_num);
            continue;
        }
        memcpy((void *) (uintptr_t) r.addr, (void *) (uintptr_t) s.addr, s.len);
        push(to->cq, r.wr_id, IBV_WC_SUCCESS, IBV_WC_RECV, s.len, to->qp.qp_num);
        if (from) push(from->cq, s.wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, 0, from->qp.qp_num);
    }
}

static int fake_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    pthread_mutex_lock(&mu);
    struct fake_qp *q = (struct fake_qp *) qp;
    int rc = 0;
    if (qp->state != IBV_QPS_RTS) violation("post_send in state %d", qp->state);
    if (wr->next) violation("post_send: a chain of work requests");
    if (wr->opcode != IBV_WR_SEND || wr->send_flags != IBV_SEND_SIGNALED || wr->num_sge != 1)
        violation("post_send: opcode %d flags %u num_sge %d", wr->opcode, wr->send_flags, wr->num_sge);
    if ((wr->wr_id >> 16) != 1) violation("post_send: wr_id 0x%llx is not kind 1", (unsigned long long) wr->wr_id);
    check_sge(qp, wr->sg_list, "post_send");
    struct fake_qp *to = qps[q->dest_qpn % MAXQP];
    if (q->outstanding_sends >= 32) { violation("post_send: more than 32 outstanding"); rc = ENOMEM; }
    else if (!to || to->dest_qpn != qp->qp_num) { violation("post_send: QP %u is connected to %u, which is not connected back", qp->qp_num, q->dest_qpn); rc = EINVAL; }
    else {
        q->outstanding_sends++;
        to->sends[(to->shead + to->scount) % QDEPTH] = (struct wr) {wr->wr_id, wr->sg_list->addr, wr->sg_list->length};
        to->scount++;
        deliver(to);
    }
    if (rc && bad) *bad = wr;
    pthread_mutex_unlock(&mu);
    return rc;
}

static int fake_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
    pthread_mutex_lock(&mu);
    struct fake_qp *q = (struct fake_qp *) qp;
    int rc = 0;
    if (qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS) violation("post_recv in state %d", qp->state);
    if (wr->next || wr->num_sge != 1) violation("post_recv: chain or num_sge %d", wr->num_sge);
    if ((wr->wr_id >> 16) != 2) violation("post_recv: wr_id 0x%llx is not kind 2", (unsigned long long) wr->wr_id);
    check_sge(qp, wr->sg_list, "post_recv");
    if (q->outstanding_recvs >= 32) { violation("post_recv: more than 32 outstanding"); rc = ENOMEM; }
    else {
        q->outstanding_recvs++;
        q->recvs[(q->rhead + q->rcount) % QDEPTH] = (struct wr) {wr->wr_id, wr->sg_list->addr, wr->sg_list->length};
        q->rcount++;
        deliver(q);
    }
    if (rc && bad) *bad = wr;
    pthread_mutex_unlock(&mu);
    return rc;
}

static int fake_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
    pthread_mutex_lock(&mu);
    struct fake_cq *c = (struct fake_cq *) cq;
    int got = 0;
    int cap = (int) (sizeof c->wc / sizeof c->wc[0]);
    while (got < n && c->count > 0) {
        wc[got++] = c->wc[c->head];
        c->head = (c->head + 1) % cap;
        c->count--;
    }
    pthread_mutex_unlock(&mu);
    return got;
}

const char *ibv_wc_status_str(enum ibv_wc_status status) {
    return status == IBV_WC_SUCCESS ? "success" : "fake error";
}
