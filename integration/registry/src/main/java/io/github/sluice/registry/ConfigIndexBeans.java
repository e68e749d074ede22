package io.github.sluice.registry;

import java.util.ArrayList;

import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;

/**
 * The bean that Apicurio's config-index Quarkus extension generates at build time (its deployment
 * artifact is not on Maven Central): the index of dynamic configuration properties, empty here.
 */
@ApplicationScoped
public class ConfigIndexBeans {
    @Produces
    @ApplicationScoped
    DynamicConfigPropertyList dynamicConfigProperties() {
        return new DynamicConfigPropertyList(new ArrayList<>());
    }
}
