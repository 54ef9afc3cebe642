/* <mma.h> on the CPU path: not available. The toolkit's header (found on
 * some hosts' default include path) needs nvcc; this one stops the CPU
 * build with a plain reason instead. */
#pragma once
#error "cml-cpu: the CPU path cannot run <mma.h>: grade this file on a GPU"
