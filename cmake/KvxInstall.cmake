# cmake --install: libkvx.so (and the static libraries), the headers, the `kvx` command and
# its UCX probe, a CMake package (find_package(kvx): kvx::kvx is the shared library,
# kvx::kvx_static the static ones) and pkg-config files (kvx.pc: the shared library, for C
# and C++; kvx-static.pc: the static libraries).
include(CMakePackageConfigHelpers)

install(DIRECTORY api/include/kvx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(kvx_shared PROPERTIES EXPORT_NAME kvx)
set_target_properties(kvx PROPERTIES EXPORT_NAME kvx_static)
install(TARGETS kvx_shared kvx kvx_c kvx_api kvx_engine kvx_agent kvx_kv EXPORT kvxTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kvxTargets NAMESPACE kvx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvx)
if(TARGET kvx_cli)
  install(TARGETS kvx_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

configure_package_config_file(cmake/kvxConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/kvxConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvx)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kvxConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kvxConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/kvxConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvx)

# The CUDA runtime, when compiled in: libkvx.so needs it at run time (its directory is in
# kvx.pc for the linker), the static libraries at link time.
set(KVX_PC_CUDA_LIBS "")
if(KVX_WITH_CUDA)
  set(KVX_PC_CUDA_LIBS "-L${CUDAToolkit_LIBRARY_DIR} -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR} -lcudart")
endif()
configure_file(cmake/kvx.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kvx.pc @ONLY)
configure_file(cmake/kvx-static.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kvx-static.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kvx.pc ${CMAKE_CURRENT_BINARY_DIR}/kvx-static.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
