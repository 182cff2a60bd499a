package io.parallaxkv.hbase;

import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.RegionLocations;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.client.ConnectionRegistry;
import org.apache.hadoop.hbase.security.User;

/**
 * The connection registry of the async path ({@code hbase.client.registry.impl}):
 * {@code ConnectionFactory.createAsyncConnection} asks a registry for the cluster id before it
 * builds the connection, and the default one asks ZooKeeper. This one answers from the
 * configuration; there is no meta region or master to locate.
 */
public final class ParallaxRegistry implements ConnectionRegistry {
  private final Configuration conf;

  public ParallaxRegistry(Configuration conf, User user) {
    this.conf = conf;
  }

  @Override
  public CompletableFuture<String> getClusterId() {
    return CompletableFuture.completedFuture("parallax");
  }

  @Override
  public CompletableFuture<RegionLocations> getMetaRegionLocations() {
    return CompletableFuture.failedFuture(new UnsupportedOperationException(
        "ConnectionRegistry.getMetaRegionLocations: there is no meta region"));
  }

  @Override
  public CompletableFuture<ServerName> getActiveMaster() {
    return CompletableFuture.failedFuture(new UnsupportedOperationException(
        "ConnectionRegistry.getActiveMaster: there is no master"));
  }

  @Override
  public String getConnectionString() {
    return "parallax:" + conf.get(ParallaxConnection.PATH);
  }

  @Override
  public void close() {
    // Holds nothing.
  }
}
