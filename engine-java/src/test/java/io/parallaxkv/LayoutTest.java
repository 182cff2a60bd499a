package io.parallaxkv;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.parallaxkv.internal.Layout;
import org.junit.jupiter.api.Test;

/** The struct offsets and limits the Java side hard-codes match the C header (JNI run). */
class LayoutTest {
  @Test
  void javaLayoutMatchesTheHeader() {
    assumeTrue("jni".equals(Parallax.backend()), "the JNI bridge reports the C layout");
    assertArrayEquals(Layout.expected(), Layout.actual());
  }
}
