package dev.jdist.cluster;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.net.spi.InetAddressResolver;
import java.net.spi.InetAddressResolverProvider;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * A name service for test JVMs in which one name resolves only once a file exists: a Kubernetes pod's DNS name, which
 * has no answer until that pod runs. {@code -Djdist.test.lateDns=NAME=IPV4@FILE}; every other name goes to the
 * system's resolver. Installed in a child JVM only, through a {@code META-INF/services} file the test writes on that
 * JVM's class path (the JDK's resolver SPI, JEP 418), so no other test sees it.
 */
public final class LateDnsResolverProvider extends InetAddressResolverProvider {
    public static final String PROPERTY = "jdist.test.lateDns";

    @Override
    public InetAddressResolver get(Configuration configuration) {
        InetAddressResolver system = configuration.builtinResolver();
        String spec = System.getProperty(PROPERTY, "");
        int eq = spec.indexOf('=');
        int at = spec.indexOf('@');
        if (eq < 0 || at < eq) return system;
        String name = spec.substring(0, eq);
        String address = spec.substring(eq + 1, at);
        Path file = Path.of(spec.substring(at + 1));
        return new InetAddressResolver() {
            @Override
            public Stream<InetAddress> lookupByName(String host, LookupPolicy policy) throws UnknownHostException {
                if (!host.equalsIgnoreCase(name)) return system.lookupByName(host, policy);
                if (!Files.exists(file)) throw new UnknownHostException(host + ": no such host (yet)");
                return Stream.of(InetAddress.getByName(address));
            }

            @Override
            public String lookupByAddress(byte[] addr) throws UnknownHostException {
                return system.lookupByAddress(addr);
            }
        };
    }

    @Override
    public String name() {
        return "jdist-test-late-dns";
    }
}
