# Runs COMMAND; fails when it fails or prints anything (a warning is a failure).
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "")
  message(FATAL_ERROR "exit ${rc}\n${out}")
endif()
