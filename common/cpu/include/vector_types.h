/* vector_types.h on the CPU path: CUDA's built-in vector types as plain
 * aggregates (C and C++), with the alignment a GPU gives them, so a
 * reinterpret_cast to int4 behaves as on a GPU. */
#ifndef CML_CPU_VECTOR_TYPES_H
#define CML_CPU_VECTOR_TYPES_H

#define CML_CPU_VEC2(T, N, A) typedef struct __attribute__((aligned(A))) N##2 { T x, y; } N##2;
#define CML_CPU_VEC3(T, N) typedef struct N##3 { T x, y, z; } N##3;
#define CML_CPU_VEC4(T, N, A) typedef struct __attribute__((aligned(A))) N##4 { T x, y, z, w; } N##4;
#define CML_CPU_VECS(T, N, A2, A4) CML_CPU_VEC2(T, N, A2) CML_CPU_VEC3(T, N) CML_CPU_VEC4(T, N, A4)

CML_CPU_VECS(int, int, 8, 16)
CML_CPU_VECS(unsigned int, uint, 8, 16)
CML_CPU_VECS(float, float, 8, 16)
CML_CPU_VECS(double, double, 16, 16)
CML_CPU_VECS(long long, longlong, 16, 16)
CML_CPU_VECS(unsigned long long, ulonglong, 16, 16)
CML_CPU_VECS(short, short, 4, 8)
CML_CPU_VECS(unsigned short, ushort, 4, 8)
CML_CPU_VECS(signed char, char, 2, 4)
CML_CPU_VECS(unsigned char, uchar, 2, 4)

/* make_int4() and friends. */
#define CML_CPU_MAKE2(T, N) static inline N##2 make_##N##2(T x, T y) { N##2 r = {x, y}; return r; }
#define CML_CPU_MAKE3(T, N) static inline N##3 make_##N##3(T x, T y, T z) { N##3 r = {x, y, z}; return r; }
#define CML_CPU_MAKE4(T, N) \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 r = {x, y, z, w}; return r; }
#define CML_CPU_MAKES(T, N) CML_CPU_MAKE2(T, N) CML_CPU_MAKE3(T, N) CML_CPU_MAKE4(T, N)
CML_CPU_MAKES(int, int)
CML_CPU_MAKES(unsigned int, uint)
CML_CPU_MAKES(float, float)
CML_CPU_MAKES(double, double)
CML_CPU_MAKES(long long, longlong)
CML_CPU_MAKES(unsigned long long, ulonglong)
CML_CPU_MAKES(short, short)
CML_CPU_MAKES(unsigned short, ushort)
CML_CPU_MAKES(signed char, char)
CML_CPU_MAKES(unsigned char, uchar)

#endif
