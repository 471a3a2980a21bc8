# Test labels (issue 23 item 6). Every test carries exactly one of:
#   unit      cmocka tests and checks of the tree itself: seconds in all
#             (cmake --build build --target check-fast)
#   cli       the command line, the libraries, bad input, fuzz replay: C and
#             shell, no npm package
#   e2e       rewritten models run in ONNX Runtime (tests/e2e, tests/verify):
#             skipped without their npm packages (tests/e2e/need_npm.sh)
#   memcheck  a unit test again under valgrind
#   slow      stress, scaling and fuzz-like suites: minutes each, and timing
#             that a loaded machine stretches; left out of the README's test
#             command (-LE slow) and run by tests/ci_extra.sh
# and may carry suite labels besides (bad_input, fuzz, verify).
# tests/meta/labels.sh checks the rule on the configured tree.
set(RNNSTATE_TEST_KINDS unit cli e2e memcheck slow)

# rnnstate_label_tests(): gives every test of the current directory that has
# no kind yet the kind its name says (a test declared slow where it is added
# keeps it). Called at the end of each CMakeLists.txt that adds tests:
# set_tests_properties reaches only the current directory's tests.
function(rnnstate_label_tests)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} LABELS labels)
    if(NOT labels)
      set(labels "")
    endif()
    set(has_kind FALSE)
    foreach(kind IN LISTS RNNSTATE_TEST_KINDS)
      if(kind IN_LIST labels)
        set(has_kind TRUE)
      endif()
    endforeach()
    if(has_kind)
      continue()
    endif()
    if(t MATCHES "\\.memcheck$")
      set(kind memcheck)
    elseif(t MATCHES "^(unit|meta|docs)\\.")
      set(kind unit)
    elseif(t MATCHES "^(e2e|verify)\\.")
      set(kind e2e)
    elseif(t MATCHES "^(cli|lazy|bad_input|fuzz|library|install|package|python)(\\.|$)")
      set(kind cli)
    else()
      # left without a kind: meta.labels fails, naming it
      message(AUTHOR_WARNING "test ${t} has no kind label: give it one of ${RNNSTATE_TEST_KINDS} "
                             "(LABELS where it is added, or a name pattern in tests/labels.cmake)")
      continue()
    endif()
    set_property(TEST ${t} APPEND PROPERTY LABELS ${kind})
  endforeach()
endfunction()
