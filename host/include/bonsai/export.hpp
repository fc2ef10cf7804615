#pragma once
// libbonsai_host is built with hidden visibility; only what is marked with
// BONSAI_HOST_API is exported.
#if defined(_WIN32)
#define BONSAI_HOST_API
#else
#define BONSAI_HOST_API __attribute__((visibility("default")))
#endif
