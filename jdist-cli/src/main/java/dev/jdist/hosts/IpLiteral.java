package dev.jdist.hosts;

import java.net.InetAddress;
import java.util.regex.Pattern;

/** Whether a string is an IP literal exactly as Python's {@code ipaddress.ip_address} decides (never a DNS lookup). */
public final class IpLiteral {
    private static final String OCTET = "(?:0|[1-9][0-9]{0,2})";
    private static final Pattern IPV4 = Pattern.compile(OCTET + "\\." + OCTET + "\\." + OCTET + "\\." + OCTET);
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+(%[^%\\s/]+)?");

    private IpLiteral() {
    }

    public static boolean isIp(String s) {
        return isIpv4(s) || isIpv6(s);
    }

    public static boolean isIpv4(String s) {
        if (s == null || !IPV4.matcher(s).matches()) {
            return false;
        }
        for (String part : s.split("\\.")) {
            if (Integer.parseInt(part) > 255) {
                return false;
            }
        }
        return true;
    }

    public static boolean isIpv6(String s) {
        if (s == null || !s.contains(":") || !IPV6_CHARS.matcher(s).matches()) {
            return false;
        }
        String addr = s.contains("%") ? s.substring(0, s.indexOf('%')) : s;
        if (addr.contains(".")) {
            // an embedded IPv4 tail must itself be a strict IPv4 literal
            String tail = addr.substring(addr.lastIndexOf(':') + 1);
            if (!isIpv4(tail)) {
                return false;
            }
        }
        try {
            // a literal containing ':' never triggers a lookup
            return InetAddress.getByName(addr) != null;
        } catch (Exception e) {
            return false;
        }
    }
}
