package io.parallaxkv.mongo;

import io.parallaxkv.NoSuchEntryException;
import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The engine volume under {@code --dbpath} and its collection regions. Each collection is one
 * region named {@code mongo/<db>.<collection>}; a database is the set of its collections (it
 * exists while it has one, as in MongoDB). Region names are at most
 * {@link Parallax#MAX_REGION_NAME} bytes, which bounds namespaces to 121 bytes.
 */
final class MongoVolume implements AutoCloseable {
  static final String VOLUME_FILE = "parallax.vol";
  private static final String REGION_PREFIX = "mongo/";
  private static final String USERS_REGION = "auth/users";
  private static final long SEGMENT_BYTES = 2L << 20;
  static final int MAX_NAMESPACE_BYTES = Parallax.MAX_REGION_NAME - REGION_PREFIX.length();

  private final Parallax volume;
  private final Map<String, CollectionStore> open = new ConcurrentHashMap<>();

  MongoVolume(Path dbPath) {
    try {
      Files.createDirectories(dbPath);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("cannot create --dbpath " + dbPath, e);
    }
    this.volume = Parallax.open(dbPath.resolve(VOLUME_FILE), Options.DEFAULTS);
  }

  /** The namespaces ({@code db.collection}) of every collection on the volume. */
  List<String> namespaces() {
    List<String> out = new ArrayList<>();
    for (String region : volume.regions()) {
      if (region.startsWith(REGION_PREFIX)) out.add(region.substring(REGION_PREFIX.length()));
    }
    return out;
  }

  /** The collection {@code namespace}, creating its region if it has none. */
  CollectionStore openOrCreate(String namespace) {
    return open.computeIfAbsent(namespace, ns -> {
      Region region = volume.region(REGION_PREFIX + ns);
      return new CollectionStore(region, ns);
    });
  }

  /**
   * The collection {@code namespace} if its region exists (null if not): for readers of the
   * catalog, which must not bring back a collection a concurrent drop just removed. Serialized
   * with {@link #drop}, so it finds the region either before the drop began or gone.
   */
  synchronized CollectionStore openExisting(String namespace) {
    return open.computeIfAbsent(namespace, ns -> {
      try {
        return new CollectionStore(volume.openRegion(REGION_PREFIX + ns), ns);
      } catch (NoSuchEntryException dropped) {
        return null;
      }
    });
  }

  /**
   * The region of the server's users ({@link UserStore}); its name is outside the collections'
   * prefix, so it is no database's collection.
   */
  Region usersRegion() {
    return volume.region(USERS_REGION);
  }

  /** Closes and drops the region of {@code namespace}: its documents, indexes and catalog. */
  synchronized void drop(String namespace) {
    CollectionStore store = open.remove(namespace);
    if (store != null) store.close();
    volume.dropRegion(REGION_PREFIX + namespace);
  }

  /** Makes every acknowledged write of every collection durable (the {@code fsync} command). */
  void syncAll() {
    for (CollectionStore store : open.values()) store.sync();
  }

  /** Bytes of the segments in use (the volume is shared by every database). */
  long storageBytes() {
    return volume.stats().segmentsUsed() * SEGMENT_BYTES;
  }

  /** Bytes of the volume file. */
  long fileBytes() {
    return volume.stats().volumeBytes();
  }

  @Override
  public void close() {
    open.clear();
    volume.close(); // closes the regions and makes every write durable
  }
}
