/* cml_append.h: CML_APPEND(buf, len, used, fmt, ...) appends printf-style
 * text at buf + *used, never past len (*used may end past len: the text was
 * cut). The labs' diagnosis messages are built with it. */
#ifndef CML_APPEND_H
#define CML_APPEND_H

#include <stdio.h>

#define CML_APPEND(buf, len, used, ...)                                          \
    do {                                                                         \
        if (*(used) < (len)) {                                                   \
            int k_ = snprintf((buf) + *(used), (len) - *(used), __VA_ARGS__);    \
            *(used) += k_ < 0 ? 0 : (size_t)k_;                                  \
        }                                                                        \
    } while (0)

#endif /* CML_APPEND_H */
