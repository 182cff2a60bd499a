package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.RegionInfoBuilder;
import org.apache.hadoop.hbase.client.RegionLocator;

/** A table's location: one region, covering every row, served by this process. */
final class ParallaxRegionLocator implements RegionLocator {
  /** The "server" of every region: this process. */
  static final ServerName LOCAL = ServerName.valueOf("localhost", 0, 1L);

  private final TableName name;

  ParallaxRegionLocator(TableName name) {
    this.name = name;
  }

  static RegionInfo region(TableName name) {
    return RegionInfoBuilder.newBuilder(name).setStartKey(HConstants.EMPTY_START_ROW)
        .setEndKey(HConstants.EMPTY_END_ROW).setRegionId(1L).build();
  }

  private HRegionLocation location() {
    return new HRegionLocation(region(name), LOCAL);
  }

  @Override
  public HRegionLocation getRegionLocation(byte[] row, int replicaId, boolean reload) {
    return location();
  }

  @Override
  public List<HRegionLocation> getRegionLocations(byte[] row, boolean reload) {
    return List.of(location());
  }

  @Override
  public void clearRegionLocationCache() {
    // Nothing cached: the single location never changes.
  }

  @Override
  public List<HRegionLocation> getAllRegionLocations() throws IOException {
    return List.of(location());
  }

  @Override
  public TableName getName() {
    return name;
  }

  @Override
  public void close() {
    // Holds nothing.
  }
}
