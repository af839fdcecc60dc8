// Symbol visibility for the SDK library and for plugin entry points.
#pragma once

#if defined(_WIN32)
#error "induct supports ELF platforms (Linux) only"
#endif

// Types and functions of libinduct_sdk.so that plugins and the host share.
#define INDUCT_SDK_API __attribute__((visibility("default")))

// The one symbol a plugin exports (plugins build with -fvisibility=hidden).
#define INDUCT_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
