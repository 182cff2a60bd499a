package io.parallaxkv.hbase;

import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import io.parallaxkv.ScanOptions;
import io.parallaxkv.WriteOptions;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.exceptions.DeserializationException;

/**
 * The tables of a volume, persisted in the engine region {@value #REGION}: per table its
 * descriptor (HBase's own protobuf form, so families keep max versions, min versions, TTL and
 * every other attribute), whether it is enabled, and the id naming its data region. Writes are
 * synced: a table a client was told exists survives a crash.
 */
final class TableCatalog {
  static final String REGION = "hbase-catalog";
  private static final byte[] NEXT_ID = "next-id".getBytes(StandardCharsets.UTF_8);
  private static final byte[] TABLE_PREFIX = "table/".getBytes(StandardCharsets.UTF_8);

  /** A table as the catalog records it. */
  record Entry(long id, boolean enabled, TableDescriptor descriptor) {}

  private final Region region;

  TableCatalog(Region region) {
    this.region = region;
  }

  /** Every table, by name. */
  Map<TableName, Entry> load() throws IOException {
    Map<TableName, Entry> tables = new LinkedHashMap<>();
    try (Scanner s = region.scanner(ScanOptions.builder().prefix(TABLE_PREFIX).build())) {
      for (; s.isValid(); s.next()) {
        Entry e = decode(s.value());
        tables.put(e.descriptor().getTableName(), e);
      }
    }
    return tables;
  }

  /** A fresh id for a table's data region. */
  synchronized long nextId() {
    byte[] v = region.get(NEXT_ID);
    long id = v == null ? 1 : ByteBuffer.wrap(v).getLong();
    region.put(NEXT_ID, ByteBuffer.allocate(8).putLong(id + 1).array(), WriteOptions.SYNC);
    return id;
  }

  void save(Entry e) {
    byte[] d = TableDescriptorBuilder.toByteArray(e.descriptor());
    ByteBuffer b = ByteBuffer.allocate(9 + d.length).putLong(e.id()).put((byte) (e.enabled() ? 1 : 0)).put(d);
    region.put(key(e.descriptor().getTableName()), b.array(), WriteOptions.SYNC);
  }

  void remove(TableName name) {
    region.delete(key(name), WriteOptions.SYNC);
  }

  private static byte[] key(TableName name) {
    byte[] n = name.getNameAsString().getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(TABLE_PREFIX.length + n.length).put(TABLE_PREFIX).put(n).array();
  }

  private static Entry decode(byte[] v) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(v);
    long id = b.getLong();
    boolean enabled = b.get() != 0;
    byte[] d = new byte[b.remaining()];
    b.get(d);
    try {
      return new Entry(id, enabled, TableDescriptorBuilder.parseFrom(d));
    } catch (DeserializationException e) {
      throw new IOException("corrupt table descriptor in the catalog", e);
    }
  }
}
