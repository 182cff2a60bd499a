package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoVersion;
import java.util.List;

/**
 * The server version the handshake reports. The library defaults to 4.0 (wire version 7), which
 * current drivers refuse: pymongo 4.20 needs wire version 9 (MongoDB 4.4), the Java driver 5.14
 * needs 8. 4.4 is the oldest both accept, so drivers use the fewest newer features.
 */
enum AdvertisedVersion implements MongoVersion {
  MONGO_4_4(List.of(4, 4, 0), 9);

  private final List<Integer> versionArray;
  private final int wireVersion;

  AdvertisedVersion(List<Integer> versionArray, int wireVersion) {
    this.versionArray = versionArray;
    this.wireVersion = wireVersion;
  }

  @Override
  public List<Integer> getVersionArray() {
    return versionArray;
  }

  @Override
  public int getWireVersion() {
    return wireVersion;
  }
}
