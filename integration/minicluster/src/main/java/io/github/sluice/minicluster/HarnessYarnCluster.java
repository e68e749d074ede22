package io.github.sluice.minicluster;

import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.resourcemanager.HarnessResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;

/** MiniYARNCluster whose ResourceManager is a {@link HarnessResourceManager}. */
final class HarnessYarnCluster extends MiniYARNCluster {
  HarnessYarnCluster(String name, int nodeManagers) {
    super(name, 1, nodeManagers, 1, 1);
  }

  @Override
  protected ResourceManager createResourceManager() {
    return new HarnessResourceManager(HadoopCluster.HOST);
  }

  /** Makes the RM web app serve its own pages again; see {@link HarnessResourceManager}. */
  int reclaimResourceManagerWebApp() {
    return ((HarnessResourceManager) getResourceManager()).restartWebApp();
  }
}
