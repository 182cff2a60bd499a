package io.parallaxkv.hbase;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * An interface implemented by an object that has only some of its methods: a call goes to the
 * target's public method of the same name and parameter types; a default method of the
 * interface the target lacks runs as the interface defines it; anything else throws an
 * UnsupportedOperationException naming the call.
 */
final class SupportedCalls implements InvocationHandler {
  private final Class<?> api;
  private final Object target;
  private final Map<Method, Method> routes = new ConcurrentHashMap<>();

  private SupportedCalls(Class<?> api, Object target) {
    this.api = api;
    this.target = target;
  }

  static <T> T proxy(Class<T> api, Object target) {
    return api.cast(Proxy.newProxyInstance(api.getClassLoader(), new Class<?>[] {api},
        new SupportedCalls(api, target)));
  }

  @Override
  public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
    if (method.getDeclaringClass() == Object.class) {
      return switch (method.getName()) {
        case "equals" -> proxy == args[0];
        case "hashCode" -> System.identityHashCode(proxy);
        default -> api.getSimpleName() + " of " + target;
      };
    }
    Method impl = routes.computeIfAbsent(method, this::find);
    if (impl != method) {
      try {
        return impl.invoke(target, args);
      } catch (InvocationTargetException e) {
        throw e.getCause();
      }
    }
    if (method.isDefault()) return InvocationHandler.invokeDefault(proxy, method, args);
    throw new UnsupportedOperationException(api.getSimpleName() + "." + method.getName()
        + Arrays.toString(method.getParameterTypes()).replace('[', '(').replace(']', ')')
        + " is not supported by the Parallax HBase adapter");
  }

  /** The target's method for {@code m}, or {@code m} itself when it has none. */
  private Method find(Method m) {
    try {
      return target.getClass().getMethod(m.getName(), m.getParameterTypes());
    } catch (NoSuchMethodException e) {
      return m;
    }
  }
}
