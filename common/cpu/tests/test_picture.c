/* Access pictures (CML_CPU_PICTURE, a runner's --picture): kernels of known
 * patterns (picture_kernels.cu) run on the CPU path with the recording on,
 * the records written and read back, the SVG drawn by the runners' own
 * function (common/src/access_picture.c), and its data-* numbers checked
 * against what each pattern must give. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cml/cml_access_picture.h"
#include "picture_kernels.h"

#define CHECK(call) cr_assert_eq((call), cudaSuccess, "%s failed: %s", #call, cudaGetErrorString(call))

/* "picture_kernels.cu:N", the line marked mark:NAME. */
static void marked_line(const char *name, char *buf, size_t len)
{
    FILE *f = fopen(CML_CPU_TEST_PICTURE_KERNELS, "r");
    cr_assert_not_null(f, "cannot read %s", CML_CPU_TEST_PICTURE_KERNELS);
    char text[400], want[64];
    snprintf(want, sizeof want, "mark:%s", name);
    int n = 0, found = 0;
    while (!found && fgets(text, sizeof text, f) != NULL) {
        ++n;
        found = strstr(text, want) != NULL;
    }
    fclose(f);
    cr_assert(found, "no line marked %s", want);
    snprintf(buf, len, "picture_kernels.cu:%d", n);
}

static float *device_floats(size_t n)
{
    float *d = NULL;
    CHECK(cudaMalloc((void **)&d, n * sizeof *d));
    CHECK(cudaMemset(d, 0, n * sizeof *d));
    return d;
}

/* What the kernels run so far drew: the records written and read back, the
 * worst of each space, the SVG text (malloc'd). */
static char *draw(void)
{
    char path[] = "/tmp/cml_picture_test_XXXXXX", why[300];
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0, "a temporary file");
    close(fd);
    cr_assert_eq(cml_cpu_picture_write(path), 0, "the records are written to %s", path);
    cml_access_list list;
    int read = cml_access_read(path, &list, why, sizeof why);
    unlink(path);
    cr_assert(read, "the records read back: %s", why);
    char *svg = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&svg, &len);
    cr_assert_not_null(mem);
    cr_assert_eq(cml_access_svg(mem, "test", cml_access_worst(&list, 1, NULL), cml_access_worst(&list, 0, NULL),
                                "no shared access", "no global access", "footer"),
                 0);
    fclose(mem);
    cml_access_free(&list);
    cr_assert(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "</svg>\n") != NULL, "a whole SVG document");
    return svg;
}

/* The start of a space's panel tag, and the end of the panel (the next
 * panel's start, or the end of the text). */
static const char *panel(const char *svg, const char *space, const char **end)
{
    char tag[64];
    snprintf(tag, sizeof tag, "<g class=\"panel\" data-space=\"%s\"", space);
    const char *p = strstr(svg, tag);
    cr_assert_not_null(p, "the SVG has a %s panel", space);
    const char *next = strstr(p + 1, "<g class=\"panel\"");
    if (end != NULL)
        *end = next != NULL ? next : p + strlen(p);
    return p;
}

/* The value of attribute name in the tag that starts at tag ("" when absent). */
static const char *attr(const char *tag, const char *name, char *buf, size_t len)
{
    char want[64];
    snprintf(want, sizeof want, " %s=\"", name);
    const char *close = strchr(tag, '>'), *p = strstr(tag, want);
    buf[0] = '\0';
    if (p == NULL || (close != NULL && p > close))
        return buf;
    p += strlen(want);
    size_t n = strcspn(p, "\"");
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p);
    return buf;
}

static long num(const char *svg, const char *space, const char *name)
{
    char buf[64];
    attr(panel(svg, space, NULL), name, buf, sizeof buf);
    cr_assert(buf[0] != '\0', "the %s panel has %s", space, name);
    return strtol(buf, NULL, 10);
}

static const char *text(const char *svg, const char *space, const char *name)
{
    static char buf[256];
    return attr(panel(svg, space, NULL), name, buf, sizeof buf);
}

/* Tags `<elem ` in a space's panel whose attribute name is value (NULL: any). */
static int count_tags(const char *svg, const char *space, const char *elem, const char *name, const char *value)
{
    const char *end = NULL, *p = panel(svg, space, &end);
    char open[32], buf[64];
    snprintf(open, sizeof open, "<%s ", elem);
    int n = 0;
    for (p = strstr(p, open); p != NULL && p < end; p = strstr(p + 1, open))
        n += name == NULL || strcmp(attr(p, name, buf, sizeof buf), value) == 0;
    return n;
}

// ------------------------------------------------------------ shared memory

/* One warp reading s[lane * stride]: the picture's degree, wavefronts and
 * banks; banks with `words` words each, `busy` of them. */
static char *shared_stride(int stride)
{
    cml_cpu_picture_on();
    float *out = device_floats(32);
    CHECK(k_pic_shared_stride(out, stride));
    cudaFree(out);
    char *svg = draw();
    char where[64];
    marked_line("pic-shared-stride", where, sizeof where);
    cr_expect_str_eq(text(svg, "shared", "data-where"), where, "the shared panel draws the marked read");
    cr_expect_str_eq(text(svg, "shared", "data-op"), "ld");
    cr_expect_eq(num(svg, "shared", "data-requests"), 1, "one request");
    cr_expect_eq(num(svg, "shared", "data-lanes"), 32);
    cr_expect_eq(count_tags(svg, "shared", "line", NULL, NULL), 32, "a line per lane");
    return svg;
}

static void expect_degree(const char *svg, long degree)
{
    cr_expect_eq(num(svg, "shared", "data-degree"), degree, "degree %ld", degree);
    cr_expect_eq(num(svg, "shared", "data-worst-wavefronts"), degree, "the runtime's model: %ld wavefronts", degree);
    cr_expect_eq(num(svg, "shared", "data-drawn-wavefronts"), degree, "the drawing's banks: %ld wavefronts", degree);
    cr_expect_eq(num(svg, "shared", "data-wavefronts"), degree, "the line's wavefronts");
    cr_expect_eq(num(svg, "shared", "data-ideal"), 1, "ideal: 1 wavefront");
}

/* One warp at s[lane * stride]: the degree; `busy` banks holding `words`
 * distinct words each; lane 31's word (31 * stride) drawn once. */
static char *expect_stride(int stride, long degree, const char *words, int busy)
{
    char *svg = shared_stride(stride), word[16];
    expect_degree(svg, degree);
    cr_expect_eq(count_tags(svg, "shared", "rect", "data-words", words), busy, "%d banks of %s words", busy, words);
    snprintf(word, sizeof word, "%d", 31 * stride);
    cr_expect_geq(count_tags(svg, "shared", "line", "data-word", word), 1, "lane 31's word is %s", word);
    return svg;
}

Test(picture, shared_stride_1_is_conflict_free)
{
    char *svg = expect_stride(1, 1, "1", 32);
    cr_expect_eq(num(svg, "shared", "data-broadcast"), 0);
    cr_expect_eq(count_tags(svg, "global", "rect", "data-touched", "1"), 4, "the store: 4 sectors");
    free(svg);
}

Test(picture, shared_stride_2_is_2_way) { free(expect_stride(2, 2, "2", 16)); }
Test(picture, shared_stride_33_is_conflict_free) { free(expect_stride(33, 1, "1", 32)); }

Test(picture, shared_stride_32_is_32_way)
{
    char *svg = expect_stride(32, 32, "32", 1);
    cr_expect_eq(count_tags(svg, "shared", "line", "data-bank", "0"), 32, "every lane in bank 0");
    free(svg);
}

Test(picture, a_broadcast_is_one_wavefront_and_marked)
{
    char *svg = expect_stride(0, 1, "1", 1);
    cr_expect_eq(num(svg, "shared", "data-broadcast"), 1, "marked as a broadcast");
    cr_expect_eq(count_tags(svg, "shared", "circle", "data-lanes", "32"), 1, "one word, 32 lanes on it");
    cr_expect_eq(count_tags(svg, "shared", "line", "data-broadcast", "1"), 32);
    free(svg);
}

Test(picture, eight_byte_accesses_are_drawn_in_two_phases)
{
    cml_cpu_picture_on();
    double *out = NULL;
    CHECK(cudaMalloc((void **)&out, 32 * sizeof *out));
    CHECK(k_pic_shared_double(out));
    cudaFree(out);
    char *svg = draw();
    cr_expect_eq(num(svg, "shared", "data-access-bytes"), 8);
    cr_expect_eq(num(svg, "shared", "data-phases"), 2, "16 lanes a phase");
    cr_expect_eq(num(svg, "shared", "data-degree"), 1);
    cr_expect_eq(num(svg, "shared", "data-worst-wavefronts"), 2, "a wavefront a phase");
    cr_expect_eq(num(svg, "shared", "data-worst-ideal"), 2);
    cr_expect_eq(num(svg, "shared", "data-requests"), 2, "two requests: one a phase");
    cr_expect_eq(count_tags(svg, "shared", "g", "data-phase", "1"), 1, "phase 2 drawn");
    cr_expect_eq(count_tags(svg, "shared", "line", NULL, NULL), 64, "two words per lane");
    free(svg);
}

/* A 32x32 tile written by rows, read by columns: the picture shows the
 * column read (the marked line) at the given degree. */
static void expect_tile(int kind, long degree)
{
    cml_cpu_picture_on();
    float *in = device_floats(1024), *out = device_floats(1024);
    CHECK(k_pic_tile(in, out, kind));
    cudaFree(in);
    cudaFree(out);
    char *svg = draw(), where[64];
    marked_line("pic-tile-read", where, sizeof where);
    cr_expect_str_eq(text(svg, "shared", "data-where"), where, "the column read is drawn");
    cr_expect_str_eq(text(svg, "shared", "data-op"), "ld");
    cr_expect_eq(num(svg, "shared", "data-degree"), degree);
    cr_expect_eq(num(svg, "shared", "data-worst-wavefronts"), degree);
    cr_expect_eq(num(svg, "shared", "data-requests"), 32, "32 warps, a request each");
    cr_expect_eq(num(svg, "shared", "data-wavefronts"), 32 * degree);
    free(svg);
}

Test(picture, a_plain_tile_column_read_is_32_way) { expect_tile(0, 32); }
Test(picture, a_padded_tile_column_read_is_conflict_free) { expect_tile(1, 1); }
Test(picture, a_swizzled_tile_column_read_is_conflict_free) { expect_tile(2, 1); }

// ------------------------------------------------------------ global memory

/* The global panel: sectors per request (the line's), the worst
 * request's sectors and ideal (the runtime's and the drawing's), the
 * 128-byte lines and bytes used drawn. */
static void expect_global(char *svg, const char *per_request, const char *ideal_per_request, long sectors, long ideal,
                          long lines, long bytes_used)
{
    cr_expect_str_eq(text(svg, "global", "data-op"), "ld", "the load is drawn (the worst, or the first of equals)");
    cr_expect_str_eq(text(svg, "global", "data-sectors-per-request"), per_request);
    cr_expect_str_eq(text(svg, "global", "data-ideal-per-request"), ideal_per_request);
    cr_expect_eq(num(svg, "global", "data-worst-sectors"), sectors, "the runtime's count");
    cr_expect_eq(num(svg, "global", "data-drawn-sectors"), sectors, "the drawing's sectors");
    cr_expect_eq(num(svg, "global", "data-worst-ideal"), ideal);
    cr_expect_eq(count_tags(svg, "global", "rect", "data-touched", "1"), sectors, "%ld sectors filled", sectors);
    cr_expect_eq(num(svg, "global", "data-lines"), lines, "%ld lines of 128 bytes", lines);
    cr_expect_eq(num(svg, "global", "data-bytes-used"), bytes_used);
    cr_expect_eq(num(svg, "global", "data-bytes-fetched"), 32 * sectors);
    cr_expect_eq(num(svg, "shared", "data-none"), 1, "no shared access: said so");
    free(svg);
}

static char *global_stride(int stride)
{
    cml_cpu_picture_on();
    float *in = device_floats(32 * (size_t)stride), *out = device_floats(32);
    CHECK(k_pic_global_stride(in, out, stride));
    cudaFree(in);
    cudaFree(out);
    char *svg = draw(), where[64];
    marked_line("pic-global-stride", where, sizeof where);
    cr_expect_str_eq(text(svg, "global", "data-where"), where);
    return svg;
}

Test(picture, global_stride_1_is_4_sectors_per_request) { expect_global(global_stride(1), "4.00", "4.00", 4, 4, 1, 128); }
Test(picture, global_stride_2_is_8_sectors_per_request) { expect_global(global_stride(2), "8.00", "4.00", 8, 4, 2, 128); }
Test(picture, global_stride_32_is_a_sector_per_lane)
{
    expect_global(global_stride(32), "32.00", "4.00", 32, 4, 32, 128);
}

/* A float4 per lane from `offset` bytes into a 256-byte aligned array. */
static char *float4s(size_t offset)
{
    cml_cpu_picture_on();
    float *in = device_floats(32 * 4 + 8), *out = device_floats(32 * 4);
    CHECK(k_pic_global_float4((const char *)in + offset, out));
    cudaFree(in);
    cudaFree(out);
    char *svg = draw(), where[64];
    marked_line("pic-global-float4", where, sizeof where);
    cr_expect_str_eq(text(svg, "global", "data-where"), where);
    cr_expect_eq(num(svg, "global", "data-access-bytes"), 16, "one 16-byte access a lane");
    return svg;
}

Test(picture, a_float4_per_lane_is_16_sectors_per_request)
{
    expect_global(float4s(0), "16.00", "16.00", 16, 16, 4, 512);
}

/* 512 bytes from 16 bytes into a line: 17 sectors over 5 lines, 16 ideal. */
Test(picture, float4s_16_bytes_into_a_line_are_17_sectors_ideal_16)
{
    expect_global(float4s(16), "17.00", "16.00", 17, 16, 5, 512);
}

// ------------------------------------------------------------ the file

Test(picture, a_file_that_is_not_a_picture_is_refused)
{
    char path[] = "/tmp/cml_picture_test_XXXXXX", why[300];
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "hello\n", 6), 6);
    close(fd);
    cml_access_list list;
    cr_expect_not(cml_access_read(path, &list, why, sizeof why));
    cr_expect(strstr(why, "not a CML_CPU_PICTURE file") != NULL, "why: %s", why);
    unlink(path);
}
