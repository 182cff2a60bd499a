package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class BufferVariantsTest {
  @TempDir Path dir;
  Parallax db;
  Region r;

  @BeforeEach
  void open() {
    db = TestSupport.open(dir);
    r = db.region("r");
  }

  @AfterEach
  void close() {
    db.close();
  }

  /** Buffers whose remaining bytes are {@code content}, in every flavour. */
  static Stream<Arguments> kinds() {
    return Stream.of(
        Arguments.of("heap", (Function<byte[], ByteBuffer>) ByteBuffer::wrap),
        Arguments.of("direct", (Function<byte[], ByteBuffer>) c -> ByteBuffer.allocateDirect(c.length).put(c).flip()),
        Arguments.of("heap-readonly", (Function<byte[], ByteBuffer>) c -> ByteBuffer.wrap(c).asReadOnlyBuffer()),
        Arguments.of("direct-readonly", (Function<byte[], ByteBuffer>) c -> ByteBuffer.allocateDirect(c.length).put(c).flip().asReadOnlyBuffer()),
        Arguments.of("heap-sliced", (Function<byte[], ByteBuffer>) c -> {
          ByteBuffer big = ByteBuffer.allocate(c.length + 20);
          big.position(7).put(c);
          return big.position(7).limit(7 + c.length).slice();
        }),
        Arguments.of("direct-sliced-offset", (Function<byte[], ByteBuffer>) c -> {
          ByteBuffer big = ByteBuffer.allocateDirect(c.length + 20);
          big.position(5).put(c);
          return big.position(5).limit(5 + c.length); // not sliced: position 5
        }),
        Arguments.of("heap-offset-wrap", (Function<byte[], ByteBuffer>) c -> {
          byte[] a = new byte[c.length + 9];
          System.arraycopy(c, 0, a, 3, c.length);
          return ByteBuffer.wrap(a, 3, c.length);
        }));
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("kinds")
  void putGetDeleteWithBuffers(String name, Function<byte[], ByteBuffer> make) {
    ByteBuffer key = make.apply(b("key-" + name));
    ByteBuffer value = make.apply(b("value-" + name));
    int kp = key.position(), vp = value.position();
    r.put(key, value);
    assertEquals(kp, key.position(), "position unchanged");
    assertEquals(vp, value.position());
    assertEquals("value-" + name, s(r.get(b("key-" + name))));
    assertEquals("value-" + name, s(r.get(key)));
    assertTrue(r.exists(key));
    // get into every writable flavour of destination
    for (ByteBuffer dst : new ByteBuffer[] {ByteBuffer.allocate(64), ByteBuffer.allocateDirect(64),
        ByteBuffer.allocate(80).position(10).slice(), ByteBuffer.allocateDirect(80).position(3)}) {
      int pos = dst.position();
      int n = r.get(key, dst);
      assertEquals(("value-" + name).length(), n);
      assertEquals(pos + n, dst.position());
      byte[] got = new byte[n];
      dst.get(pos, got);
      assertEquals("value-" + name, s(got));
    }
    ByteBuffer small = ByteBuffer.allocate(3);
    assertEquals(("value-" + name).length(), r.get(key, small), "needed size");
    assertEquals(0, small.position());
    assertEquals(Region.NOT_FOUND, r.get(make.apply(b("absent")), ByteBuffer.allocate(10)));
    try (WriteBatch batch = new WriteBatch()) {
      batch.delete(key);
      r.write(batch);
    }
    assertFalse(r.exists(key));
    r.put(key, value);
    r.delete(key);
    assertNull(r.get(key));
  }

  @Test
  void readOnlyDestinationIsRejected() {
    r.put(b("k"), b("v"));
    assertThrows(InvalidArgumentException.class,
        () -> r.get(ByteBuffer.wrap(b("k")), ByteBuffer.allocate(4).asReadOnlyBuffer()));
    assertThrows(NullPointerException.class,
        () -> r.get(ByteBuffer.wrap(b("k")), (ByteBuffer) null));
  }

  @Test
  void largeValueIntoBuffers() {
    byte[] v = new byte[300_000];
    for (int i = 0; i < v.length; i++) v[i] = (byte) i;
    r.put(ByteBuffer.wrap(b("big")), ByteBuffer.allocateDirect(v.length).put(v).flip());
    ByteBuffer dst = ByteBuffer.allocate(v.length);
    assertEquals(v.length, r.get(ByteBuffer.wrap(b("big")), dst));
    assertArrayEquals(v, dst.array());
    assertArrayEquals(v, r.get(ByteBuffer.allocateDirect(3).put(b("big")).flip()));
  }
}
