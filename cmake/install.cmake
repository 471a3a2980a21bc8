# What `cmake --install` puts in place, and the Debian package (cpack -G DEB):
# the program, its man page and bash completion; the shared and static
# libraries, rnnstate.h, rnnstate.pc and the CMake package (find_package(rnnstate)
# -> rnnstate::rnnstate); the JSON Schema of the --json report; the example;
# the Python module rnnstate (python/rnnstate, ctypes over the shared library).
include(CMakePackageConfigHelpers)

set(RNNSTATE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/rnnstate)
set(RNNSTATE_DATA_DIR ${CMAKE_INSTALL_DATADIR}/rnnstate-rewrite)

install(TARGETS rnnstate-rewrite RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS rnnstate rnnstate_static EXPORT rnnstateTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS rnnstate LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_ONLY)
set_target_properties(rnnstate PROPERTIES EXPORT_NAME rnnstate)
set_target_properties(rnnstate_static PROPERTIES EXPORT_NAME rnnstate_static)
install(FILES include/rnnstate.h ${RNNSTATE_GENERATED_INCLUDE}/rnnstate_version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(EXPORT rnnstateTargets NAMESPACE rnnstate:: DESTINATION ${RNNSTATE_CMAKE_DIR})
configure_file(cmake/rnnstateConfig.cmake.in ${PROJECT_BINARY_DIR}/rnnstateConfig.cmake @ONLY)
# within a major version the ABI only grows (docs/library.md): a program
# that asks for 0.2 builds against any later 0.x
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rnnstateConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rnnstateConfig.cmake
              ${PROJECT_BINARY_DIR}/rnnstateConfigVersion.cmake
        DESTINATION ${RNNSTATE_CMAKE_DIR})

# rnnstate.pc names absolute directories under the prefix the install runs
# with (cmake --install --prefix, or /usr for the package), so it is written
# at install time, into a file of its own: installs may run side by side.
install(CODE "
  string(RANDOM LENGTH 12 pc_id)
  set(pc_dir \"${PROJECT_BINARY_DIR}/pkgconfig-\${pc_id}\")
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  set(libdir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\")
  set(includedir \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  configure_file(\"${PROJECT_SOURCE_DIR}/cmake/rnnstate.pc.in\" \"\${pc_dir}/rnnstate.pc\" @ONLY)
  file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/pkgconfig\"
       TYPE FILE FILES \"\${pc_dir}/rnnstate.pc\")
  file(REMOVE_RECURSE \"\${pc_dir}\")
")

# The man page carries the project's version.
file(READ docs/rnnstate-rewrite.1 man_page)
string(REGEX REPLACE "\"rnnstate-rewrite [0-9.]+\"" "\"rnnstate-rewrite ${PROJECT_VERSION}\""
       man_page "${man_page}")
file(WRITE ${PROJECT_BINARY_DIR}/rnnstate-rewrite.1 "${man_page}")
install(FILES ${PROJECT_BINARY_DIR}/rnnstate-rewrite.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES completions/rnnstate-rewrite.bash RENAME rnnstate-rewrite
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
install(FILES docs/report.schema.json DESTINATION ${RNNSTATE_DATA_DIR})
install(FILES examples/rewrite_model.c examples/CMakeLists.txt
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

# ---- the Python module ------------------------------------------------------------
# python/rnnstate (pure Python) goes into RNNSTATE_PYTHON_DIR, relative to the
# prefix: Debian's lib/python3/dist-packages under /usr (the package);
# under another prefix, the directory below it on python3's sys.path
# (/usr/local: lib/python3.X/dist-packages on Debian), else
# lib/python3.X/site-packages (then set PYTHONPATH). _install.py records where
# the library is from the module, so an install under any prefix finds its
# own library without LD_LIBRARY_PATH.
option(RNNSTATE_INSTALL_PYTHON "Install the Python module rnnstate" ON)
if(RNNSTATE_INSTALL_PYTHON)
  if(NOT RNNSTATE_PYTHON_DIR)
    find_program(RNNSTATE_PYTHON3 NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
    find_program(RNNSTATE_PYTHON3 NAMES python3)
    set(python_dir lib/python3/site-packages)
    if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
      set(python_dir lib/python3/dist-packages)
    elseif(RNNSTATE_PYTHON3)
      execute_process(
        COMMAND ${RNNSTATE_PYTHON3} -c "import os, sys
prefix = os.path.normpath(sys.argv[1])
found = [os.path.relpath(p, prefix) for p in sys.path
         if p.endswith('-packages') and os.path.normpath(p).startswith(prefix + '/lib/')]
print(found[0] if found else 'lib/python%d.%d/site-packages' % sys.version_info[:2])"
                ${CMAKE_INSTALL_PREFIX}
        OUTPUT_VARIABLE python_found OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE python_status)
      if(python_status EQUAL 0 AND python_found)
        set(python_dir ${python_found})
      endif()
    endif()
    set(RNNSTATE_PYTHON_DIR ${python_dir} CACHE STRING
        "Where the Python module rnnstate is installed, relative to the prefix (or absolute)")
  endif()
  set(python_abs ${RNNSTATE_PYTHON_DIR})
  if(NOT IS_ABSOLUTE ${python_abs})
    set(python_abs ${CMAKE_INSTALL_PREFIX}/${python_abs})
  endif()
  file(RELATIVE_PATH python_to_lib ${python_abs}/rnnstate ${CMAKE_INSTALL_FULL_LIBDIR})
  file(WRITE ${PROJECT_BINARY_DIR}/python/_install.py
       "# Written by cmake --install: the library directory, relative to this module.\n"
       "LIBDIR_FROM_MODULE = \"${python_to_lib}\"\n")
  install(FILES python/rnnstate/__init__.py python/rnnstate/_lib.py
                ${PROJECT_BINARY_DIR}/python/_install.py
          DESTINATION ${RNNSTATE_PYTHON_DIR}/rnnstate)
endif()

# ---- the Debian package ---------------------------------------------------------
# cmake -S . -B build-deb -DCMAKE_INSTALL_PREFIX=/usr -DRNNSTATE_BUILD_TESTS=OFF
# cmake --build build-deb -j2 && (cd build-deb && cpack -G DEB)
# dpkg-shlibdeps computes Depends (libc6, libprotobuf-c1).
set(CPACK_PACKAGE_NAME rnnstate-rewrite)
set(CPACK_PACKAGE_VENDOR "rnnstate-rewrite")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "expose the hidden state of ONNX RNN, GRU and LSTM layers as graph inputs and outputs")
set(CPACK_PACKAGE_DESCRIPTION
    "rnnstate-rewrite rewrites ONNX models so that the hidden state of their recurrent layers
becomes explicit graph inputs and outputs, so that a stateless runtime such as ONNX
Runtime can run them chunk by chunk with the state fed back. The package holds the
command-line tool, the C library (librnnstate, rnnstate.h, pkg-config and CMake files)
and the Python module rnnstate (ctypes over the library; import rnnstate).")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3, python3-onnx")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(RNNSTATE_DEB_MAINTAINER "rnnstate-rewrite maintainers <maintainers@rnnstate-rewrite.invalid>"
    CACHE STRING "The Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER ${RNNSTATE_DEB_MAINTAINER})
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR})
# ldconfig runs when the package installs or removes the shared library
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/triggers)
set(CPACK_GENERATOR DEB)
include(CPack)
