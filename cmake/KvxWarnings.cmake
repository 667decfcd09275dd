# Compiler warnings for the project's own targets (not for dependencies).
function(kvx_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                                           -Wold-style-cast -Wcast-align -Woverloaded-virtual
                                           -Wno-missing-field-initializers)
  if(KVX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

if(KVX_SANITIZE)
  add_compile_options(-fsanitize=${KVX_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${KVX_SANITIZE})
endif()
