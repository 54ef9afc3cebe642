/* Stand-in for the step table that the kit's build generates for lab 01:
 * the test cml_cpu_bank_model compiles lab 01's reference bank model
 * (bank_model.c), which includes banks.h, which includes this; the model
 * uses no step. */
#ifndef CML_CPU_REF_BANKS_STEPS_H
#define CML_CPU_REF_BANKS_STEPS_H
#define BANKS_STEPS(X)
#endif
