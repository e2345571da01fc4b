package dev.jdist.config;

import java.util.List;
import java.util.Map;

/**
 * What a host reports about RDMA: its device names and, where known (Linux {@code rdma link}), the network interface
 * each device sits on.
 */
public record RdmaReport(List<String> devices, Map<String, String> deviceByInterface) {
    public RdmaReport {
        devices = List.copyOf(devices);
        deviceByInterface = Map.copyOf(deviceByInterface);
    }

    public boolean enabled() {
        return !devices.isEmpty();
    }
}
