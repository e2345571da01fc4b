/**
 * The host model every command shares: {@link dev.jdist.hosts.HostEntry} (ssh, ips, rdma),
 * {@link dev.jdist.hosts.HostList} ({@code --hosts}), {@link dev.jdist.hosts.Hostfile} (MLX's hostfile, read in both
 * forms and written in the object form) and {@link dev.jdist.hosts.IpLiteral}.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist, dev.jdist.spi, dev.jdist.console.
 */
package dev.jdist.hosts;
