package io.parallaxkv;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Child JVMs die with the test that started them, also when it is killed and its finally blocks
 * never run (a fork timeout, kill -9): a kill-loop child left behind writes until the disk is
 * full. Here a middle JVM starts a grandchild the way the tests start children, and is killed
 * with -9; the grandchild must be gone too.
 */
class ChildLifetimeTest {
  @Test
  void aChildDiesWhenItsParentIsKilled() throws Exception {
    assumeFalse(TestSupport.diesWithParent().isEmpty(),
        "no /usr/bin/setpriv (util-linux) here: children are not tied to their parent");
    Process middle = TestSupport.startChild(OrphanChild.class, "start-a-grandchild");
    ProcessHandle grandchild = null;
    try {
      BufferedReader out = new BufferedReader(new InputStreamReader(middle.getInputStream(), UTF_8));
      for (String line; (line = out.readLine()) != null; ) {
        if (line.startsWith("GRANDCHILD ")) {
          Optional<ProcessHandle> h = ProcessHandle.of(Long.parseLong(line.substring(11)));
          grandchild = h.orElse(null);
          break;
        }
      }
      assertNotNull(grandchild, "the middle JVM reported its child");
      assertTrue(grandchild.isAlive());
      middle.destroyForcibly();
      assertTrue(middle.waitFor(30, TimeUnit.SECONDS));
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (grandchild.isAlive() && System.nanoTime() < deadline) Thread.sleep(50);
      assertFalse(grandchild.isAlive(), "the grandchild outlived its parent's kill -9");
    } finally {
      middle.destroyForcibly();
      if (grandchild != null) grandchild.destroyForcibly();
    }
  }
}
