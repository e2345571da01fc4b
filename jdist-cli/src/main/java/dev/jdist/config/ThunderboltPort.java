package dev.jdist.config;

/**
 * One Thunderbolt receptacle of a host.
 *
 * @param iface      the network interface carrying Thunderbolt networking on this receptacle ({@code en2})
 * @param portName   the hardware-port name ({@code "Thunderbolt 1"}), for messages
 * @param uuid       this receptacle's own identity (macOS: the bus's {@code domain_uuid_key})
 * @param peerUuid   the identity of the receptacle at the other end of the cable, or null when nothing
 *                   with an identity is attached
 * @param speed      the link speed as the host reports it ({@code "Up to 80 Gb/s"}), or null if unknown
 * @param attached   the name of a device without a Thunderbolt domain plugged in (a dock, a disk), or null
 */
public record ThunderboltPort(String iface, String portName, String uuid, String peerUuid, String speed, String attached) {

    public ThunderboltPort(String iface, String portName, String uuid, String peerUuid, String speed) {
        this(iface, portName, uuid, peerUuid, speed, null);
    }

    /** The Thunderbolt generation the reported speed implies: 5 for 80 Gb/s and up, 4 for 40, 3 for 20; 0 if unknown. */
    public int generation() {
        int gbps = gigabits(speed);
        if (gbps >= 80) {
            return 5;
        }
        if (gbps >= 40) {
            return 4;
        }
        if (gbps >= 20) {
            return 3;
        }
        return 0;
    }

    static int gigabits(String speed) {
        if (speed == null) {
            return 0;
        }
        var m = java.util.regex.Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*Gb/s").matcher(speed);
        return m.find() ? (int) Math.round(Double.parseDouble(m.group(1))) : 0;
    }
}
