package io.parallaxkv.hbase;

import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;

/** The checks HBase's client makes on a mutation before sending it (ConnectionUtils.validatePut). */
final class Mutations {
  private Mutations() {}

  static void validate(Mutation m, long maxKeyValueSize) {
    if (m instanceof Put && m.isEmpty()) throw new IllegalArgumentException("No columns to insert");
    if (maxKeyValueSize <= 0) return;
    for (List<Cell> cells : m.getFamilyCellMap().values()) {
      for (Cell c : cells) {
        if (c.getSerializedSize() > maxKeyValueSize) {
          throw new IllegalArgumentException("KeyValue size too large");
        }
      }
    }
  }
}
