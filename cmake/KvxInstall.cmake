# cmake --install: headers, libraries, a CMake package (find_package(kvx)) and kvx.pc.
include(CMakePackageConfigHelpers)

install(DIRECTORY api/include/kvx DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kvx kvx_api kvx_engine kvx_agent EXPORT kvxTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kvxTargets NAMESPACE kvx:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvx)

configure_package_config_file(cmake/kvxConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/kvxConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvx)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kvxConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kvxConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/kvxConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kvx)

configure_file(cmake/kvx.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kvx.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kvx.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
