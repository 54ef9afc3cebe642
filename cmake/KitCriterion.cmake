# Find Criterion (the unit-test framework) through pkg-config or
# CMAKE_PREFIX_PATH, never a fixed path, and provide the target kit::criterion.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(KIT_CRITERION QUIET IMPORTED_TARGET criterion)
endif()
if(KIT_CRITERION_FOUND)
  add_library(kit::criterion ALIAS PkgConfig::KIT_CRITERION)
  set(_kit_criterion_where "pkg-config, version ${KIT_CRITERION_VERSION}")
else()
  find_path(KIT_CRITERION_INCLUDE_DIR criterion/criterion.h)
  find_library(KIT_CRITERION_LIBRARY criterion)
  if(NOT KIT_CRITERION_INCLUDE_DIR OR NOT KIT_CRITERION_LIBRARY)
    message(FATAL_ERROR
      "Criterion (the C unit-test framework) was not found.\n"
      "Install it from your distribution's packages:\n"
      "  Debian/Ubuntu:  sudo apt-get install libcriterion-dev\n"
      "  Fedora:         sudo dnf install criterion-devel\n"
      "  Arch:           sudo pacman -S criterion\n"
      "  Homebrew:       brew install criterion\n"
      "or point CMAKE_PREFIX_PATH (or PKG_CONFIG_PATH) at an existing install.")
  endif()
  add_library(kit_criterion INTERFACE)
  target_include_directories(kit_criterion INTERFACE "${KIT_CRITERION_INCLUDE_DIR}")
  target_link_libraries(kit_criterion INTERFACE "${KIT_CRITERION_LIBRARY}")
  add_library(kit::criterion ALIAS kit_criterion)
  set(_kit_criterion_where "${KIT_CRITERION_LIBRARY}")
endif()
message(STATUS "Criterion: ${_kit_criterion_where}")
