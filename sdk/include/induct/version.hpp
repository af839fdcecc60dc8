// Versions of the SDK and of the plugin boundary.
//
// INDUCT_SDK_VERSION_* is the semantic version of the SDK package (headers + libinduct_sdk).
// INDUCT_PLUGIN_API_VERSION is the version of the binary contract between the host and a
// plugin library; the host refuses a plugin built against any other value.
// INDUCT_SDK_NUMERICS_VERSION names the results of the SDK's kernels. See
// docs/sdk-reference.md ("Versioning") for what may change without bumping it.
#pragma once

#define INDUCT_SDK_VERSION_MAJOR 0
#define INDUCT_SDK_VERSION_MINOR 1
#define INDUCT_SDK_VERSION_PATCH 4
#define INDUCT_SDK_VERSION_STRING "0.1.4"

// The version of what the SDK's kernels compute: it changes when one of them rounds or
// computes differently, not when functions are added. Part of every trial's key.
#define INDUCT_SDK_NUMERICS_VERSION "0.1.5"

#define INDUCT_PLUGIN_API_VERSION 4
