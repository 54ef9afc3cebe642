/* main() of a lab's verifier, <stem>_verify: the lab's spec
 * (labs/<lab>/spec.c) and the kit's host code, never a student's
 * (cml_spec.h says what it does). */
#include <cml/cml_spec.h>

int main(int argc, char **argv) { return cml_spec_main(&cml_lab_spec, argc, argv); }
