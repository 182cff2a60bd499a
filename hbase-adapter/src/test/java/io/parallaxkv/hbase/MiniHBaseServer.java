package io.parallaxkv.hbase;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The MiniHBaseCluster of the tests as a process, for the side-by-side benchmarks in
 * docs/hbase.md: starts it, writes an
 * hbase-site.xml pointing at its ZooKeeper into the directory given as argument, prints "ready",
 * and stops when its standard input closes.
 */
public final class MiniHBaseServer {
  private MiniHBaseServer() {}

  public static void main(String[] args) throws Exception {
    Path conf = Files.createDirectories(Path.of(args[0]));
    try (MiniHBase hbase = new MiniHBase()) {
      Files.writeString(conf.resolve("hbase-site.xml"), """
          <?xml version="1.0"?>
          <configuration>
            <property><name>hbase.zookeeper.quorum</name><value>127.0.0.1</value></property>
            <property><name>hbase.zookeeper.property.clientPort</name><value>%s</value></property>
          </configuration>
          """.formatted(hbase.connection().getConfiguration().get("hbase.zookeeper.property.clientPort")));
      System.out.println("ready");
      System.out.flush();
      while (System.in.read() >= 0) {
        // Runs until the benchmark closes our standard input.
      }
    }
  }
}
