package io.parallaxkv.replication;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code java -jar parallax-replication.jar --zk HOST:PORT --dir DIR --port P --host 127.0.0.x}. */
@Command(name = "parallax-replication", mixinStandardHelpOptions = true,
    description = "A Parallax region server: replicated regions (Talos), ZooKeeper for coordination.")
public final class ServerMain implements Callable<Integer> {
  @Spec CommandSpec spec;
  @Option(names = "--zk", required = true, description = "ZooKeeper connect string")
  String zk;
  @Option(names = "--dir", required = true, description = "directory of this server's volume")
  Path dir;
  @Option(names = "--host", defaultValue = "127.0.0.1", description = "address to serve on")
  String host;
  @Option(names = "--port", required = true, description = "port to serve on")
  int port;
  @Option(names = "--rf", defaultValue = "3", description = "copies of each region")
  int rf;
  @Option(names = "--regions", defaultValue = "2", description = "regions (key ranges) to create")
  int regions;
  @Option(names = "--mode", defaultValue = "send-index",
      description = "send-index (backups install the primary's levels) or build-index")
  String mode;
  @Option(names = "--session-timeout-ms", defaultValue = "4000", description = "ZooKeeper session timeout")
  int sessionTimeoutMs;
  @Option(names = "--l0-size", defaultValue = "4194304", description = "bytes of a region's in-memory L0")
  long l0Size;
  @Option(names = "--index-interval-ms", defaultValue = "10000",
      description = "send-index: ship a primary's levels at most this often (a promotion replays up to this much log)")
  long indexIntervalMs;
  @Option(names = "--sync-writes", description = "a primary syncs each write to its log before it ships it "
      + "(default: it ships it once written; every copy holds it before the client is answered, Talos)")
  boolean syncWrites;
  @Option(names = "--placement", defaultValue = "hybrid",
      description = "hybrid (small values in the leaves, medium and large ones in logs) or in-place")
  String placement;

  @Override
  public Integer call() throws Exception {
    if (!mode.equals("send-index") && !mode.equals("build-index")) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--mode: send-index or build-index");
    }
    boolean sendIndex = mode.equals("send-index");
    if (!placement.equals("in-place") && !placement.equals("hybrid")) {
      throw new CommandLine.ParameterException(spec.commandLine(), "--placement: in-place or hybrid");
    }
    RegionServer s = new RegionServer(new RegionServer.Config(zk, dir, host, port, rf, regions, sendIndex,
        placement.equals("hybrid"), sessionTimeoutMs, l0Size, indexIntervalMs, syncWrites));
    System.out.println("READY " + s.id());
    System.out.flush();
    Runtime.getRuntime().addShutdownHook(new Thread(s::close));
    Thread.currentThread().join();
    return 0;
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new ServerMain()).execute(args));
  }
}
