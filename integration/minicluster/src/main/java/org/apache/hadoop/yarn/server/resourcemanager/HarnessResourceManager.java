package org.apache.hadoop.yarn.server.resourcemanager;

import org.apache.hadoop.yarn.webapp.WebApp;

/**
 * ResourceManager for the Sluice test harness (our code, placed in this package only to reach the
 * package-private {@code getWebapp()}).
 *
 * <p>Why it exists: every YARN web app installs its Guice servlet pipeline in a JVM-wide static
 * slot of GuiceFilter, so in a one-JVM minicluster the NodeManager web apps, started after the
 * ResourceManager's, take over the RM's HTTP port and /ws/v1/cluster/* answers 404.
 * {@link #restartWebApp()} restarts the RM web app on the same port once the NodeManagers are up,
 * which makes the RM's pipeline the JVM-wide one again.
 */
public class HarnessResourceManager extends ResourceManager {

  /** Host the web app binds to when it is restarted. */
  private final String webHost;

  public HarnessResourceManager(String webHost) {
    this.webHost = webHost;
  }

  /** No keytab login inside the harness JVM, as MiniYARNCluster's own ResourceManager does. */
  @Override
  protected void doSecureLogin() {}

  /**
   * Stops the RM web app and starts it again on the same port.
   *
   * @return the port the web app listens on
   */
  public synchronized int restartWebApp() {
    WebApp old = getWebapp();
    if (old == null) {
      throw new IllegalStateException("ResourceManager web app not started");
    }
    int port = old.port();
    old.stop();
    webAppAddress = webHost + ":" + port;
    startWepApp();
    int now = getWebapp().port();
    if (now != port) {
      throw new IllegalStateException(
          "ResourceManager web app came back on port " + now + ", not " + port);
    }
    return now;
  }
}
