package dev.jdist.fuzz;

import dev.jdist.ConfigException;
import dev.jdist.cluster.RingHostfile;
import dev.jdist.fuzz.ConfigOracle.Verdict;
import dev.jdist.jaccl.JacclConfig;
import dev.jdist.nccl.NcclConfigProbe;
import dev.jdist.ring.RingSettings;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A seeded, bounded fuzzer of jdist's configuration readers, in-process and offline: mutated ring
 * hostfiles and environments through {@link RingSettings#fromEnvironment} and {@link RingHostfile#parse},
 * mutated JACCL device files and environments through {@link JacclConfig#fromEnv}, mutated nccl
 * environments through the backend's reader. Each case runs on a worker thread with a time limit and
 * is judged by {@link ConfigOracle}:
 * <ul>
 *   <li>crash: anything thrown but a {@link ConfigException};</li>
 *   <li>hang: no answer within the per-case limit;</li>
 *   <li>accepted invalid: the oracle says invalid (or "not configured"), jdist accepted;</li>
 *   <li>rejected valid / wrong "not configured": the other disagreements.</li>
 * </ul>
 * Cases the oracle leaves UNDECIDED (an open question, see {@link ConfigOracle.Verdict}) count only for
 * crashes and hangs; the report shows how many there were.
 * Name lookups stay in the process ({@link OfflineResolverProvider}). Run from the test suite
 * ({@code ConfigFuzzTest}) or, for bigger counts, {@code bench/chaos/fuzz-config.sh}.
 */
public final class ConfigFuzzer {

    enum Target { RING_ENV, RING_TEXT, JACCL_ENV, NCCL_ENV }

    enum Outcome { ACCEPTED, REJECTED, NOT_CONFIGURED, CRASHED, HUNG }

    /** One bad case, with enough to reproduce it by hand. */
    record Finding(long index, Target target, String kind, Verdict verdict, String detail, String env, String file) {
        @Override
        public String toString() {
            return "#" + index + " " + target + " " + kind + " (oracle: " + verdict + "): " + detail + "\n    env " + env
                    + (file == null ? "" : "\n    file " + file);
        }
    }

    /** The counts of one run. */
    record Report(long seed, long cases, Map<Target, Long> perTarget, Map<Outcome, Long> outcomes, Map<Verdict, Long> verdicts,
                  long acceptedInvalid, long rejectedValid, long wrongNotConfigured, List<Finding> findings, long millis) {
        long crashes() { return outcomes.getOrDefault(Outcome.CRASHED, 0L); }

        long hangs() { return outcomes.getOrDefault(Outcome.HUNG, 0L); }

        String summary() {
            return "config fuzz: seed " + seed + ", " + cases + " cases in " + millis + " ms " + perTarget + "\n"
                    + "  outcomes " + outcomes + "\n  oracle   " + verdicts + "\n"
                    + "  crashes " + crashes() + ", hangs " + hangs() + ", accepted invalid " + acceptedInvalid
                    + ", rejected valid " + rejectedValid + ", wrong not-configured " + wrongNotConfigured;
        }
    }

    private static final int MAX_FINDINGS = 20;
    private static final String[] JUNK = {"]", "}", "x", "[]", "1", "\"a\"", ",", "null", "{}", " ]", "\n]", "[", "0"};
    private static final String[] HOSTS = {"127.0.0.1", "127.0.0.2", "localhost", "10.0.0.1", "127.1", "192.168.7.77"};
    private static final String[] ODD_HOSTS = {"", "[::1]", "::1", "no-such-host.invalid", "127.0.0.256", "0127.0.0.1",
        " 127.0.0.1", "127.0.0.1 ", "LOCALHOST", "2130706433", "127..1", "1.2.3.4.5", "\u00e9", "ho st", "[127.0.0.1]"};
    private static final String[] ODD_PORTS = {"0", "65535", "65536", "-1", "+80", "0080", "99999999999", "", "abc", "8080:1",
        "1e3", " 80", "80 ", "\u0668\u0660", "3.5", "2147483648"};
    private static final String ALPHABET = "[]{},:\"\\ 0123456789aezAEZ.-+\n\t\u0000\u00e9\u2028\u0660\ufeff";

    private final Random rnd;
    private final long seed;
    private final Path dir;
    private final long caseLimitMs;

    ConfigFuzzer(long seed, Path dir, long caseLimitMs) {
        this.seed = seed;
        this.rnd = new Random(seed);
        this.dir = dir;
        this.caseLimitMs = caseLimitMs;
    }

    /** {@code java ... ConfigFuzzer [cases] [seed]}: prints the report, exits 1 on any finding. */
    public static void main(String[] args) throws Exception {
        long cases = args.length > 0 ? Long.parseLong(args[0]) : 100_000;
        long seed = args.length > 1 ? Long.parseLong(args[1]) : System.nanoTime();
        Path dir = Files.createTempDirectory("jdist-config-fuzz");
        Report r = new ConfigFuzzer(seed, dir, 10_000).run(cases);
        System.out.println(r.summary());
        r.findings().forEach(f -> System.out.println(f));
        deleteTree(dir);
        System.exit(r.crashes() + r.hangs() + r.acceptedInvalid() + r.rejectedValid() + r.wrongNotConfigured() == 0 ? 0 : 1);
    }

    // ------------------------------------------------------------------ the run

    private interface Attempt { boolean run() throws Exception; }

    Report run(long cases) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Map<Target, Long> perTarget = new EnumMap<>(Target.class);
        Map<Outcome, Long> outcomes = new EnumMap<>(Outcome.class);
        Map<Verdict, Long> verdicts = new EnumMap<>(Verdict.class);
        long acceptedInvalid = 0, rejectedValid = 0, wrongNotConfigured = 0;
        List<Finding> findings = new ArrayList<>();
        ExecutorService worker = newWorker();
        boolean wasOffline = OfflineResolverProvider.offline;
        OfflineResolverProvider.offline = true;
        try {
            for (long i = 0; i < cases; i++) {
                Target target = Target.values()[rnd.nextInt(Target.values().length)];
                Map<String, String> env = new HashMap<>();
                boolean strict = rnd.nextInt(3) != 0;
                byte[][] file = new byte[1][];
                Verdict verdict;
                Attempt attempt;
                switch (target) {
                    case RING_ENV -> {
                        verdict = ringEnvCase(env, strict, file);
                        attempt = () -> RingSettings.fromEnvironment(strict, env).isPresent();
                    }
                    case RING_TEXT -> {
                        byte[] doc = mutateBytes(mutateText(ringDocument()));
                        String text = new String(doc, StandardCharsets.UTF_8);
                        file[0] = doc;
                        verdict = ringText(text);
                        attempt = () -> RingHostfile.parse(dir.resolve("hosts.json"), text) != null;
                    }
                    case JACCL_ENV -> {
                        boolean custom = rnd.nextInt(4) == 0;
                        verdict = jacclEnvCase(env, strict, custom, file);
                        attempt = () -> JacclConfig.fromEnv(env, strict, custom).isPresent();
                    }
                    default -> {
                        verdict = ncclEnvCase(env, strict);
                        attempt = () -> NcclConfigProbe.fromEnv(env, strict);
                    }
                }
                perTarget.merge(target, 1L, Long::sum);
                verdicts.merge(verdict, 1L, Long::sum);
                Future<Boolean> f = worker.submit((Callable<Boolean>) attempt::run);
                Outcome outcome;
                String detail = "";
                try {
                    outcome = f.get(caseLimitMs, TimeUnit.MILLISECONDS) ? Outcome.ACCEPTED : Outcome.NOT_CONFIGURED;
                } catch (ExecutionException e) {
                    Throwable c = e.getCause();
                    if (c instanceof ConfigException) {
                        outcome = Outcome.REJECTED;
                        detail = c.getMessage();
                    } else {
                        outcome = Outcome.CRASHED;
                        detail = c.toString() + " at " + (c.getStackTrace().length > 0 ? c.getStackTrace()[0] : "?");
                    }
                } catch (TimeoutException e) {
                    outcome = Outcome.HUNG;
                    detail = "no answer within " + caseLimitMs + " ms";
                    f.cancel(true);
                    worker.shutdownNow();
                    worker = newWorker();     // the stuck thread is a daemon and is left behind
                }
                outcomes.merge(outcome, 1L, Long::sum);
                String kind = null;
                if (outcome == Outcome.CRASHED || outcome == Outcome.HUNG) {
                    kind = outcome.name();
                } else if (verdict == Verdict.UNDECIDED) {
                    kind = null;
                } else if (outcome == Outcome.ACCEPTED && verdict != Verdict.VALID) {
                    acceptedInvalid++;
                    kind = "ACCEPTED_INVALID";
                } else if (outcome == Outcome.REJECTED && verdict == Verdict.VALID) {
                    rejectedValid++;
                    kind = "REJECTED_VALID";
                } else if ((outcome == Outcome.NOT_CONFIGURED) != (verdict == Verdict.NOT_CONFIGURED)) {
                    wrongNotConfigured++;
                    kind = "WRONG_NOT_CONFIGURED";
                }
                if (kind != null && findings.size() < MAX_FINDINGS) {
                    findings.add(new Finding(i, target, kind, verdict, detail, show(env.toString()),
                            file[0] == null ? null : show(new String(file[0], StandardCharsets.UTF_8))));
                }
            }
        } finally {
            OfflineResolverProvider.offline = wasOffline;
            worker.shutdownNow();
        }
        return new Report(seed, cases, perTarget, outcomes, verdicts, acceptedInvalid, rejectedValid, wrongNotConfigured,
                findings, (System.nanoTime() - t0) / 1_000_000);
    }

    private static ExecutorService newWorker() {
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "config-fuzz");
            t.setDaemon(true);
            return t;
        });
    }

    private static String show(String s) {
        String e = s.replace("\u0000", "\\0").replace("\n", "\\n");
        return e.length() > 300 ? e.substring(0, 297) + "..." : e;
    }

    // ------------------------------------------------------------------ ring

    /** A valid ring hostfile: 1-5 ranks, 1-3 addresses each (all ranks alike), random layout. */
    String ringDocument() {
        int n = 1 + rnd.nextInt(5), m = 1 + rnd.nextInt(3);
        StringBuilder b = new StringBuilder(ws()).append('[');
        int port = 1024 + rnd.nextInt(60_000);
        for (int q = 0; q < n; q++) {
            if (q > 0) b.append(ws()).append(',');
            b.append(ws());
            if (m == 1 && rnd.nextInt(4) == 0) {
                b.append('"').append(HOSTS[rnd.nextInt(HOSTS.length)]).append(':').append(port++).append('"');
                continue;
            }
            b.append('[');
            for (int j = 0; j < m; j++) {
                if (j > 0) b.append(',').append(ws());
                b.append('"').append(HOSTS[rnd.nextInt(HOSTS.length)]).append(':').append(port++).append('"');
            }
            b.append(']');
        }
        return b.append(ws()).append(']').append(ws()).toString();
    }

    private String ws() {
        return switch (rnd.nextInt(8)) {
            case 0 -> " ";
            case 1 -> "\n";
            case 2 -> "\t";
            case 3 -> "\r\n  ";
            default -> "";
        };
    }

    private Verdict ringText(String text) {
        try {
            ConfigOracle.ringHostfile(text.getBytes(StandardCharsets.UTF_8));
            return Verdict.VALID;
        } catch (ConfigOracle.Undecided e) {
            return Verdict.UNDECIDED;
        } catch (ConfigOracle.Invalid e) {
            return Verdict.INVALID;
        }
    }

    private Verdict ringEnvCase(Map<String, String> env, boolean strict, byte[][] file) throws IOException {
        byte[] doc = mutateBytes(mutateText(ringDocument()));
        Path hostfile = dir.resolve("hosts.json");
        Files.write(hostfile, doc);
        file[0] = doc;
        int n = countRanks(doc);
        byte[] seen = doc;
        switch (rnd.nextInt(40)) {
            case 0 -> seen = null;                                   // MLX_HOSTFILE unset
            case 1 -> { env.put("MLX_HOSTFILE", ""); seen = null; }
            case 2 -> { env.put("MLX_HOSTFILE", dir.resolve("missing.json").toString()); seen = null; }
            case 3 -> { env.put("MLX_HOSTFILE", dir.toString()); seen = null; }
            case 4 -> { env.put("MLX_HOSTFILE", "/dev/null"); seen = new byte[0]; }
            default -> env.put("MLX_HOSTFILE", hostfile.toString());
        }
        if (rnd.nextInt(4000) == 0) { env.put("MLX_HOSTFILE", "/dev/zero"); seen = null; }
        if (rnd.nextInt(30) != 0) env.put("MLX_RANK", rankValue(n));
        maybe(env, "JDIST_TIMEOUT", timeoutValue());
        maybe(env, "JDIST_TRANSPORT", pick("tcp", "shm", "TCP", " shm ", "", "udp", "tcp,shm", "sh m"));
        maybe(env, "JDIST_SHM_BUFFER_KIB", pick("4", "8192", "1024", "3", "16384", "0", "-4", "abc", "", " 64 ", "+64",
                "99999999999999999999"));
        maybe(env, "JDIST_RING_SPIN_US", pick("0", "50", "1000000", "1000001", "-1", "x", "", " 5 ", "+7"));
        maybe(env, "JDIST_JOB_TOKEN", pick("", "secret", "a b", "\u00e9t\u00e9"));
        if (rnd.nextInt(5) == 0) env.put("MLX_RING_VERBOSE", pick("", "0", "1"));
        if (!env.containsKey("MLX_HOSTFILE")) seen = null;
        return ConfigOracle.ringEnv(env, strict, seen);
    }

    /** The rank count of a document, for choosing mostly valid ranks (1 when it does not parse). */
    private static int countRanks(byte[] doc) {
        try {
            Object root = ConfigOracle.jsonFile(doc);
            return root instanceof List<?> l && !l.isEmpty() ? l.size() : 1;
        } catch (ConfigOracle.Invalid e) {
            return 1;
        }
    }

    private String rankValue(int n) {
        return switch (rnd.nextInt(12)) {
            case 0 -> Integer.toString(n);
            case 1 -> pick("-1", "", " 0", "0 ", "+1", "1.0", "99999999999", "abc", "0x1", "\u0660", "2147483647", "2147483648");
            case 2 -> "0" + rnd.nextInt(n);
            case 3 -> mutateValue(Integer.toString(rnd.nextInt(n)), false);
            default -> Integer.toString(rnd.nextInt(n));
        };
    }

    private String timeoutValue() {
        String v = pick("30", "2.5", "500ms", "2m", "1ms", " 7s ", "10080m", "604800", "30 s", "0", "0.0001ms", "-1", "abc", "1h",
                "1e3", "604801", "10081m", "", " ", "5MS", "1.", ".5", "0.999ms", "\u0665");
        return rnd.nextInt(4) == 0 ? mutateValue(v, true) : v;
    }

    // ------------------------------------------------------------------ JACCL

    /** A valid JACCL device matrix: a mesh (2-8 ranks) or a ring (2-6 ranks, 1-4 devices per direction). */
    String deviceDocument() {
        boolean ring = rnd.nextBoolean();
        int n = 2 + rnd.nextInt(ring ? 5 : 7);
        int wires = 1 + rnd.nextInt(4);
        StringBuilder b = new StringBuilder(ws()).append('[');
        for (int q = 0; q < n; q++) {
            if (q > 0) b.append(',').append(ws());
            b.append('[');
            for (int p = 0; p < n; p++) {
                if (p > 0) b.append(',');
                boolean neighbour = p == (q + 1) % n || p == (q + n - 1) % n;
                if (q == p || (ring && !neighbour)) {
                    b.append("null");
                } else if (ring) {
                    b.append('[');
                    for (int w = 0; w < wires; w++) b.append(w > 0 ? "," : "").append("\"rdma_en").append(w).append('"');
                    b.append(']');
                } else {
                    b.append(rnd.nextBoolean() ? "\"rdma_en" + p + "\"" : "[\"rdma_en" + p + "\"]");
                }
            }
            b.append(']');
        }
        return b.append(']').append(ws()).toString();
    }

    private Verdict jacclEnvCase(Map<String, String> env, boolean strict, boolean custom, byte[][] file) throws IOException {
        byte[] doc = mutateBytes(mutateText(deviceDocument()));
        Path devices = dir.resolve("devices.json");
        Files.write(devices, doc);
        file[0] = doc;
        int n = countRanks(doc);
        byte[] seen = doc;
        String devVar = rnd.nextBoolean() ? "MLX_IBV_DEVICES" : "JACCL_IBV_DEVICES";
        switch (rnd.nextInt(40)) {
            case 0 -> seen = null;
            case 1 -> { env.put(devVar, dir.resolve("missing.json").toString()); seen = null; }
            case 2 -> { env.put(devVar, dir.toString()); seen = null; }
            case 3 -> { env.put(devVar, "/dev/null"); seen = new byte[0]; }
            default -> env.put(devVar, devices.toString());
        }
        if (rnd.nextInt(30) != 0) env.put(rnd.nextBoolean() ? "MLX_RANK" : "JACCL_RANK", rankValue(n));
        if (rnd.nextInt(30) != 0) {
            String coord = pick("127.0.0.1:32323", "10.0.0.1:1", "[fe80::1]:5000", "host:65535", "h:0", "h:65536", ":80", "h:",
                    "h", " 127.0.0.1:9 ", "h:123456", "h:+80", "h:\u0668");
            env.put(rnd.nextBoolean() ? "MLX_JACCL_COORDINATOR" : "JACCL_COORDINATOR", rnd.nextInt(5) == 0 ? mutateValue(coord, true) : coord);
        }
        if (rnd.nextInt(4) == 0) env.put(rnd.nextBoolean() ? "MLX_JACCL_RING" : "JACCL_RING", pick("", "1", "0"));
        maybe(env, "JDIST_TIMEOUT", timeoutValue());
        maybe(env, "JDIST_JACCL_QP", pick("uc", "rc", "UC", " rc ", "", "ud", "u c"));
        maybe(env, "JDIST_JACCL_GID_INDEX", pick("0", "3", "9999", "10000", "-1", "", " 1 ", "a", "\u0661"));
        maybe(env, "JDIST_JACCL_LIB", pick("libibverbs.so.1", "/nonexistent/libx.so", ""));
        if (!env.containsKey(devVar)) seen = null;
        return ConfigOracle.jacclEnv(env, strict, custom, seen);
    }

    // ------------------------------------------------------------------ NCCL

    private Verdict ncclEnvCase(Map<String, String> env, boolean strict) {
        int size = 1 + rnd.nextInt(8);
        if (rnd.nextInt(20) != 0) env.put("NCCL_HOST_IP", pick("127.0.0.1", "10.0.0.1", "", " ", "h"));
        if (rnd.nextInt(20) != 0) env.put("NCCL_PORT", rnd.nextInt(4) == 0 ? pick(ODD_PORTS) : Integer.toString(1 + rnd.nextInt(65535)));
        if (rnd.nextInt(20) != 0) env.put("MLX_WORLD_SIZE", rnd.nextInt(6) == 0 ? pick("0", "-1", "2.5", "x", "", "\u0662")
                : Integer.toString(size));
        if (rnd.nextInt(20) != 0) env.put("MLX_RANK", rankValue(size));
        maybe(env, "MLX_NCCL_TIMEOUT", pick("0", "300000", "-5", "soon", "", "+5", "99999999999999999999", " 7 "));
        maybe(env, "JDIST_TIMEOUT", timeoutValue());
        return ConfigOracle.ncclEnv(env, strict);
    }

    // ------------------------------------------------------------------ mutations

    /** 0-3 text mutations; which ones, and how many, is random (15 % of documents stay as generated). */
    String mutateText(String doc) {
        String s = doc;
        int k = rnd.nextInt(100) < 15 ? 0 : 1 + rnd.nextInt(3);
        for (int i = 0; i < k; i++) {
            s = switch (rnd.nextInt(14)) {
                case 0 -> s + pick(JUNK);
                case 1 -> "[" + s + "]";
                case 2 -> replaceQuoted(s, true);
                case 3 -> replaceQuoted(s, false);
                case 4 -> s.isEmpty() ? s : deleteAt(s, rnd.nextInt(s.length()));
                case 5 -> insertAt(s, rnd.nextInt(s.length() + 1), ALPHABET.charAt(rnd.nextInt(ALPHABET.length())));
                case 6 -> {
                    int a = rnd.nextInt(s.length() + 1), b = a + rnd.nextInt(s.length() - a + 1);
                    yield s.substring(0, b) + s.substring(a, b) + s.substring(b);
                }
                case 7 -> s.substring(0, rnd.nextInt(s.length() + 1));
                case 8 -> replaceFirstString(s, pick("1", "true", "null", "{}", "[]", "\"\"", "{\"a\":1}", "[[]]", "1e999999",
                        "-0", "\"127.0.0.1:1\"", "[\"127.0.0.1:1\",\"127.0.0.1:2\"]"));
                case 9 -> {
                    int depth = pickInt(2, 63, 64, 65, 200, 5000);
                    yield "[".repeat(depth) + s + "]".repeat(depth);
                }
                case 10 -> replaceFirstString(s, "1" + "0".repeat(69));
                case 11 -> rnd.nextInt(50) == 0 ? replaceFirstString(s, "\"" + "a".repeat((1 << 20) + 1) + "\"") : s;
                case 12 -> s.replaceFirst("\\]\\s*$", ",]");
                default -> s.replace(",", pick(", ", " ,", ",\n", ";", ",,"));
            };
        }
        return s;
    }

    /** Byte-level mutations after UTF-8 encoding: BOM, UTF-16, bad UTF-8, NUL, a flipped byte (or none). */
    byte[] mutateBytes(String text) {
        byte[] b = text.getBytes(StandardCharsets.UTF_8);
        return switch (rnd.nextInt(20)) {
            case 0 -> concat(new byte[] {(byte) 0xEF, (byte) 0xBB, (byte) 0xBF}, b);
            case 1 -> text.getBytes(StandardCharsets.UTF_16LE);
            case 2 -> text.getBytes(StandardCharsets.UTF_16);          // with a BOM
            case 3 -> insertByte(b, pickByte((byte) 0xFF, (byte) 0xC3, (byte) 0x80, (byte) 0xED, (byte) 0xF4));
            case 4 -> insertByte(b, (byte) 0);
            case 5 -> {
                if (b.length == 0) yield b;
                byte[] c = b.clone();
                c[rnd.nextInt(c.length)] ^= (byte) (1 << rnd.nextInt(8));
                yield c;
            }
            default -> b;
        };
    }

    /** Replaces the host (hostPart) or the port of one quoted "host:port". */
    private String replaceQuoted(String s, boolean hostPart) {
        int colon = s.indexOf(':', rnd.nextInt(s.length() + 1));
        if (colon < 0) colon = s.indexOf(':');
        if (colon < 0) return s;
        int open = s.lastIndexOf('"', colon), close = s.indexOf('"', colon);
        if (open < 0 || close < 0) return s;
        return hostPart
                ? s.substring(0, open + 1) + pick(ODD_HOSTS) + s.substring(colon)
                : s.substring(0, colon + 1) + pick(ODD_PORTS) + s.substring(close);
    }

    private String replaceFirstString(String s, String with) {
        int open = s.indexOf('"', rnd.nextInt(s.length() + 1));
        if (open < 0) open = s.indexOf('"');
        if (open < 0) return s;
        int close = s.indexOf('"', open + 1);
        if (close < 0) return s;
        return s.substring(0, open) + with + s.substring(close + 1);
    }

    private String mutateValue(String v, boolean unicodeDigits) {
        StringBuilder b = new StringBuilder(v);
        String alphabet = unicodeDigits ? " 0123456789+-.msxMS\t\u0660\u00a0" : " 0123456789+-.msxMS\t\u00a0";
        int k = 1 + rnd.nextInt(2);
        for (int i = 0; i < k; i++) {
            int op = b.isEmpty() ? 0 : rnd.nextInt(3);
            char c = alphabet.charAt(rnd.nextInt(alphabet.length()));
            switch (op) {
                case 0 -> b.insert(rnd.nextInt(b.length() + 1), c);
                case 1 -> b.deleteCharAt(rnd.nextInt(b.length()));
                default -> b.setCharAt(rnd.nextInt(b.length()), c);
            }
        }
        return b.toString();
    }

    private void maybe(Map<String, String> env, String name, String value) {
        if (rnd.nextInt(3) == 0) env.put(name, value);
    }

    @SafeVarargs
    private <T> T pick(T... options) { return options[rnd.nextInt(options.length)]; }

    private int pickInt(int... options) { return options[rnd.nextInt(options.length)]; }

    private byte pickByte(byte... options) { return options[rnd.nextInt(options.length)]; }

    private static String deleteAt(String s, int i) { return s.substring(0, i) + s.substring(i + 1); }

    private static String insertAt(String s, int i, char c) { return s.substring(0, i) + c + s.substring(i); }

    private byte[] insertByte(byte[] b, byte x) {
        int at = rnd.nextInt(b.length + 1);
        byte[] c = new byte[b.length + 1];
        System.arraycopy(b, 0, c, 0, at);
        c[at] = x;
        System.arraycopy(b, at, c, at + 1, b.length - at);
        return c;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = new byte[a.length + b.length];
        System.arraycopy(a, 0, c, 0, a.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    static void deleteTree(Path dir) throws IOException {
        try (var s = Files.walk(dir)) {
            for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }
}
