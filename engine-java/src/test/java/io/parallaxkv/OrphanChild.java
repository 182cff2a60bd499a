package io.parallaxkv;

/**
 * A child for {@link ChildLifetimeTest}: with an argument it starts a child of its own (itself,
 * without arguments) and prints that child's pid; then it sleeps until it is killed.
 */
public final class OrphanChild {
  private OrphanChild() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0) {
      Process grandchild = TestSupport.startChild(OrphanChild.class);
      System.out.println("GRANDCHILD " + grandchild.pid());
      System.out.flush();
    }
    Thread.sleep(120_000); // bounded: the test kills it long before
  }
}
