package io.parallaxkv.hbase;

import io.parallaxkv.Parallax;
import io.parallaxkv.ParallaxException;
import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import io.parallaxkv.WriteBatch;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.InvalidFamilyOperationException;
import org.apache.hadoop.hbase.KeepDeletedCells;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.NamespaceNotFoundException;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotDisabledException;
import org.apache.hadoop.hbase.TableNotEnabledException;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The tables of a volume and their lifecycle (create, disable, enable, truncate, delete, change
 * families), kept in the {@link TableCatalog} and in one engine region per table. The states and
 * exceptions are HBase's: a table is deleted or truncated only when disabled, and so on.
 */
final class Tables {
  private final Parallax volume;
  private final Sweeper sweeper;
  private final TableCatalog catalog;
  private final Map<TableName, TableStore> tables = new TreeMap<>();

  Tables(Parallax volume, Sweeper sweeper) throws IOException {
    this.volume = volume;
    this.sweeper = sweeper;
    this.catalog = new TableCatalog(volume.region(TableCatalog.REGION));
    for (TableCatalog.Entry e : catalog.load().values()) {
      tables.put(e.descriptor().getTableName(),
          new TableStore(e, volume.region(TableStore.regionName(e.id())), sweeper));
    }
  }

  synchronized TableStore get(TableName name) throws TableNotFoundException {
    TableStore t = tables.get(name);
    if (t == null) throw new TableNotFoundException(name);
    return t;
  }

  synchronized boolean exists(TableName name) {
    return tables.containsKey(name);
  }

  synchronized List<TableDescriptor> descriptors() {
    List<TableDescriptor> out = new ArrayList<>();
    for (TableStore t : tables.values()) out.add(t.descriptor());
    return out;
  }

  synchronized void create(TableDescriptor desc) throws IOException {
    TableName name = desc.getTableName();
    if (!NamespaceDescriptor.DEFAULT_NAMESPACE_NAME_STR.equals(name.getNamespaceAsString())) {
      throw new NamespaceNotFoundException(name.getNamespaceAsString());
    }
    if (desc.getColumnFamilyCount() == 0) {
      throw new DoNotRetryIOException("Table should have at least one column family.");
    }
    if (tables.containsKey(name)) throw new TableExistsException(name);
    checkSupported(desc);
    try {
      long id = catalog.nextId();
      Region region = volume.createRegion(TableStore.regionName(id));
      TableCatalog.Entry e = new TableCatalog.Entry(id, true, desc);
      catalog.save(e);
      tables.put(name, new TableStore(e, region, sweeper));
    } catch (ParallaxException ex) {
      throw Errors.of(ex);
    }
  }

  void disable(TableName name) throws IOException {
    get(name).admin(t -> {
      if (!t.entry().enabled()) throw new TableNotEnabledException(name);
      setState(t, false);
    });
  }

  void enable(TableName name) throws IOException {
    get(name).admin(t -> {
      if (t.entry().enabled()) throw new TableNotDisabledException(name);
      setState(t, true);
    });
  }

  boolean isEnabled(TableName name) throws IOException {
    return get(name).entry().enabled();
  }

  private void setState(TableStore t, boolean enabled) {
    TableCatalog.Entry e = t.entry();
    TableCatalog.Entry n = new TableCatalog.Entry(e.id(), enabled, e.descriptor());
    catalog.save(n);
    t.change(n, t.region());
  }

  synchronized void delete(TableName name) throws IOException {
    get(name).admin(t -> {
      if (t.entry().enabled()) throw new TableNotDisabledException(name);
      catalog.remove(name);
      dropRegion(t);
      t.change(t.entry(), null);
    });
    tables.remove(name);
  }

  /** Empties a disabled table into a fresh region and enables it, as HBase's truncate does. */
  void truncate(TableName name) throws IOException {
    get(name).admin(t -> {
      if (t.entry().enabled()) throw new TableNotDisabledException(name);
      long id = catalog.nextId();
      Region fresh = volume.createRegion(TableStore.regionName(id));
      TableCatalog.Entry n = new TableCatalog.Entry(id, true, t.entry().descriptor());
      catalog.save(n);
      dropRegion(t);
      t.change(n, fresh);
    });
  }

  private void dropRegion(TableStore t) {
    Region old = t.region();
    old.close();
    volume.dropRegion(old.name());
  }

  void modifyFamily(TableName name, ColumnFamilyDescriptor family) throws IOException {
    checkSupported(family);
    get(name).admin(t -> {
      if (!t.descriptor().hasColumnFamily(family.getName())) {
        throw new InvalidFamilyOperationException("Family '" + family.getNameAsString()
            + "' does not exist, so it cannot be modified");
      }
      describe(t, TableDescriptorBuilder.newBuilder(t.descriptor()).modifyColumnFamily(family)
          .build());
    });
  }

  void addFamily(TableName name, ColumnFamilyDescriptor family) throws IOException {
    checkSupported(family);
    get(name).admin(t -> {
      if (t.descriptor().hasColumnFamily(family.getName())) {
        throw new InvalidFamilyOperationException("Column family '" + family.getNameAsString()
            + "' in table '" + name + "' already exists so cannot be added");
      }
      describe(t, TableDescriptorBuilder.newBuilder(t.descriptor()).setColumnFamily(family)
          .build());
    });
  }

  /** Removes a family and its cells (so that a family added again later starts empty). */
  void deleteFamily(TableName name, byte[] family) throws IOException {
    get(name).admin(t -> {
      if (!t.descriptor().hasColumnFamily(family)) {
        throw new InvalidFamilyOperationException("Family '" + Bytes.toString(family)
            + "' does not exist, so it cannot be deleted");
      }
      if (t.descriptor().getColumnFamilyCount() == 1) {
        throw new InvalidFamilyOperationException("Family '" + Bytes.toString(family)
            + "' is the only column family in the table, so it cannot be deleted");
      }
      describe(t, TableDescriptorBuilder.newBuilder(t.descriptor()).removeColumnFamily(family)
          .build());
      dropFamilyCells(t.region(), family);
    });
  }

  /**
   * Reads follow HBase's default version rules only: deleted cells are never kept for time
   * travel, and versions are not tracked by sequence id.
   */
  private static void checkSupported(TableDescriptor desc) {
    for (ColumnFamilyDescriptor f : desc.getColumnFamilies()) checkSupported(f);
  }

  private static void checkSupported(ColumnFamilyDescriptor f) {
    if (f.getKeepDeletedCells() != KeepDeletedCells.FALSE) {
      throw new UnsupportedOperationException("ColumnFamilyDescriptor KEEP_DELETED_CELLS="
          + f.getKeepDeletedCells() + " (family " + f.getNameAsString() + ")");
    }
    if (f.isNewVersionBehavior()) {
      throw new UnsupportedOperationException("ColumnFamilyDescriptor NEW_VERSION_BEHAVIOR"
          + " (family " + f.getNameAsString() + ")");
    }
  }

  private static void dropFamilyCells(Region region, byte[] family) {
    try (Scanner s = region.scanner(); WriteBatch batch = new WriteBatch()) {
      for (; s.isValid(); s.next()) {
        byte[] key = s.key();
        if (!Arrays.equals(CellKey.family(key), family)) continue;
        batch.delete(key);
        if (batch.count() >= 1000) {
          region.write(batch);
          batch.clear();
        }
      }
      region.write(batch);
    }
  }

  void modify(TableDescriptor desc) throws IOException {
    checkSupported(desc);
    get(desc.getTableName()).admin(t -> describe(t, desc));
  }

  private void describe(TableStore t, TableDescriptor desc) {
    TableCatalog.Entry e = t.entry();
    TableCatalog.Entry n = new TableCatalog.Entry(e.id(), e.enabled(), desc);
    catalog.save(n);
    t.change(n, t.region());
  }

  synchronized void close() {
    for (TableStore t : tables.values()) t.close();
    tables.clear();
  }
}
