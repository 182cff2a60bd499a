package io.parallaxkv;

import io.parallaxkv.internal.NativeLibrary;

/** LayoutTest's child process: loads the engine from the library named by args[0]. */
final class AbiChild {
  private AbiChild() {}

  public static void main(String[] args) {
    System.setProperty(NativeLibrary.PATH_PROPERTY, args[0]);
    try {
      System.out.println("LOADED " + Parallax.backend());
    } catch (NativeLibraryException e) {
      System.out.println("REFUSED " + e.getMessage());
    }
  }
}
