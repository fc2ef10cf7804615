# The installed SDK (`cmake --install build --prefix P`):
#   P/include/bonsai/            ABI header, host API headers, the core headers they include
#   P/lib/libbonsai_host.so*     versioned SONAME
#   P/lib/bonsai/plugins/        backend plugins, found relative to libbonsai_host.so
#   P/bin/                       bonsai, bonsai-gguf, bonsai-plugin-check
#   P/share/bonsai/              golden tiny models for bonsai-plugin-check, Qwen3 vocabulary
#   P/lib/cmake/bonsai/          find_package(bonsai CONFIG) -> bonsai::abi, bonsai::host
#   P/lib/pkgconfig/bonsai.pc
# Per-target install() calls sit next to their targets; this file adds what
# belongs to no single target.
include(CMakePackageConfigHelpers)

set(BONSAI_INSTALL_CMAKEDIR lib/cmake/bonsai)

# engine.hpp includes these core headers (all header-only in use).
install(FILES
  ${PROJECT_SOURCE_DIR}/core/include/bonsai/core/error.hpp
  ${PROJECT_SOURCE_DIR}/core/include/bonsai/core/chat_template.hpp
  ${PROJECT_SOURCE_DIR}/core/include/bonsai/core/text_span.hpp
  DESTINATION include/bonsai/core)

# The CUDA plugin builds without a toolkit and probes NO_DEVICE without a GPU.
if(TARGET bonsai_cuda)
  install(TARGETS bonsai_cuda LIBRARY DESTINATION lib/bonsai/plugins)
endif()

# Golden data bonsai-plugin-check runs plugins against (tests/data/README.md).
set(bonsai_golden_models tiny-q1 tiny-q1-tied tiny-q2 tiny-q35-q1 tiny-q35-q2g64)
set(bonsai_golden_files ${BONSAI_TEST_DATA_DIR}/README.md ${BONSAI_TEST_DATA_DIR}/qwen3-vocab.gguf)
foreach(model ${bonsai_golden_models})
  foreach(suffix .gguf .prompt.json .ref.logits.f32 .ref.greedy.json)
    list(APPEND bonsai_golden_files ${BONSAI_TEST_DATA_DIR}/${model}${suffix})
  endforeach()
endforeach()
install(FILES ${bonsai_golden_files} DESTINATION share/bonsai)

# CMake package.
if(TARGET bonsai_host)
  install(EXPORT bonsaiTargets NAMESPACE bonsai:: DESTINATION ${BONSAI_INSTALL_CMAKEDIR})
  configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/bonsaiConfig.cmake.in
    ${PROJECT_BINARY_DIR}/cmake/bonsaiConfig.cmake
    INSTALL_DESTINATION ${BONSAI_INSTALL_CMAKEDIR})
  # 0.x: a minor release may change the API, so only the same minor matches.
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/bonsaiConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/cmake/bonsaiConfig.cmake
    ${PROJECT_BINARY_DIR}/cmake/bonsaiConfigVersion.cmake
    DESTINATION ${BONSAI_INSTALL_CMAKEDIR})
endif()

# pkg-config: the file finds its prefix from its own location, so the same
# file works for any --prefix given at install time.
configure_file(${CMAKE_CURRENT_LIST_DIR}/bonsai.pc.in ${PROJECT_BINARY_DIR}/cmake/bonsai.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/cmake/bonsai.pc DESTINATION lib/pkgconfig)
