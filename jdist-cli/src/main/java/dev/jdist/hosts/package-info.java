/**
 * The host model every command shares: {@link dev.jdist.hosts.HostEntry} (ssh, ips, rdma),
 * {@link dev.jdist.hosts.HostList} ({@code --hosts}), {@link dev.jdist.hosts.Hostfile} (MLX's hostfile, read in both
 * forms and written in the object form) and {@link dev.jdist.hosts.IpLiteral}. Depends only on {@code console}.
 */
package dev.jdist.hosts;
