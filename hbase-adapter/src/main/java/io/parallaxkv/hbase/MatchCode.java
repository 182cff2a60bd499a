package io.parallaxkv.hbase;

/** What to do with a cell and where to go next: HBase's {@code ScanQueryMatcher.MatchCode}. */
enum MatchCode {
  INCLUDE, SKIP, SEEK_NEXT_COL, SEEK_NEXT_ROW, INCLUDE_AND_SEEK_NEXT_COL, INCLUDE_AND_SEEK_NEXT_ROW,
  SEEK_NEXT_USING_HINT, DONE_SCAN
}
