package dev.troupe.model.causal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.codec.CorruptFrameException;
import dev.troupe.model.value.Tag;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Each bootstrap image record pinned byte for byte at its current version (DCs of different
 * builds read these bytes), a stream of frames read one at a time, and damage refused.
 */
class BootstrapImageCodecTest {
  private static final HexFormat HEX = HexFormat.of();
  private static final DependencyVector START =
      DependencyVector.of(Map.of(7, 1_700_000_000_123L, 42, 1_700_000_000_400L));
  private static final DependencyVector END =
      DependencyVector.of(Map.of(7, 1_700_000_000_200L, 42, 1_700_000_000_900L));
  /** A state with a stamped register, a counter of two DCs, a set and both kinds of marker. */
  private static final EntityState STATE = EntityState.ABSENT
      .apply(List.of(
          new Operation.Assign(ReplicaApplication.markerKey(7), LongNode.valueOf(1_700_000_000_100L)),
          new Operation.AssignReplicated("name", Json.parse("\"Ann\""), 1_700_000_000_100L, 7),
          new Operation.Increment("count", 5),
          new Operation.AddElement("tags", Json.parse("\"red\""), new Tag(7, 99L, 0))),
          1_700_000_000_300L, 7)
      .apply(List.of(new Operation.Increment("count", -2)), 1_700_000_000_350L, 42);

  static final BootstrapImage.Began BEGAN = new BootstrapImage.Began(42, START);
  static final BootstrapImage.EntityImage IMAGE = new BootstrapImage.EntityImage(
      new EntityId("Cart", "c1"), 1_700_000_000_350L, STATE);
  static final BootstrapImage.Ended ENDED = new BootstrapImage.Ended(END, 1);

  private static final String BEGAN_HEX = "0101000000102a0207fbd095ffbc312a90d395ffbc3110d85b96";
  private static final String IMAGE_HEX = "02010000008107436172740063310000018bcfe5695e0000018bcfe5695e01050d247265706c6963617465643a37010d313730303030303030303130300000018bcfe5692c0705636f756e740201070a012a04046e616d65010522416e6e220000018bcfe568640704746167730301052272656422010700000000000000630000080207062a025fd23f99";
  /**
   * The same image as written before issue 20, its state's keys in the hash tree's order (now in
   * key order: a state of few keys is a SmallPersistentMap). Same format; a reader takes the keys
   * in any order, so bytes written by an earlier build still read.
   */
  private static final String IMAGE_HEX_IN_HASH_ORDER = "02010000008107436172740063310000018bcfe5695e0000018bcfe5695e01050d247265706c6963617465643a37010d313730303030303030303130300000018bcfe5692c07046e616d65010522416e6e220000018bcfe568640704746167730301052272656422010700000000000000630005636f756e740201070a012a0400080207062a02733411eb";
  private static final String ENDED_HEX = "0301000000100207c8d195ffbc312a84d795ffbc31019c191271";

  @Test
  void eachRecordHasItsFixedBytes() {
    assertEquals(BEGAN_HEX, HEX.formatHex(BootstrapImageCodec.encode(BEGAN)));
    assertEquals(IMAGE_HEX, HEX.formatHex(BootstrapImageCodec.encode(IMAGE)));
    assertEquals(ENDED_HEX, HEX.formatHex(BootstrapImageCodec.encode(ENDED)));
    assertEquals(BEGAN, BootstrapImageCodec.decode(HEX.parseHex(BEGAN_HEX)));
    assertEquals(IMAGE, BootstrapImageCodec.decode(HEX.parseHex(IMAGE_HEX)));
    assertEquals(IMAGE, BootstrapImageCodec.decode(HEX.parseHex(IMAGE_HEX_IN_HASH_ORDER)));
    assertEquals(ENDED, BootstrapImageCodec.decode(HEX.parseHex(ENDED_HEX)));
  }

  @Test
  void aStreamIsReadOneFrameAtATimeToItsEnd() throws IOException {
    ByteArrayOutputStream stream = new ByteArrayOutputStream();
    for (BootstrapImage record : List.of(BEGAN, IMAGE, ENDED)) {
      stream.write(BootstrapImageCodec.encode(record));
    }
    ByteArrayInputStream in = new ByteArrayInputStream(stream.toByteArray());
    assertEquals(BEGAN, BootstrapImageCodec.read(in, 1 << 20));
    assertEquals(IMAGE, BootstrapImageCodec.read(in, 1 << 20));
    assertEquals(ENDED, BootstrapImageCodec.read(in, 1 << 20));
    assertNull(BootstrapImageCodec.read(in, 1 << 20));
  }

  @Test
  void damageIsRefused() {
    byte[] image = BootstrapImageCodec.encode(IMAGE);
    for (int i = 0; i < image.length; i++) {
      byte[] flipped = image.clone();
      flipped[i] ^= 0x10;
      assertThrows(RuntimeException.class, () -> BootstrapImageCodec.decode(flipped),
          "byte " + i);
    }
    byte[] cut = Arrays.copyOf(image, image.length - 3);
    assertThrows(EOFException.class,
        () -> BootstrapImageCodec.read(new ByteArrayInputStream(cut), 1 << 20));
    assertThrows(CorruptFrameException.class,
        () -> BootstrapImageCodec.read(new ByteArrayInputStream(image), image.length - 1));
  }
}
