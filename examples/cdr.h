/* A tiny CDR (XCDR1, little endian) writer and reader for the examples: enough for
 * std_msgs/msg/String and sensor_msgs/msg/Image, by hand, with no ROS library.
 * Alignment is counted from the end of the 4-byte encapsulation header, as ROS does. */
#ifndef LIBTRACER_EXAMPLES_CDR_H
#define LIBTRACER_EXAMPLES_CDR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define STRING_TYPE "std_msgs/msg/String"
#define STRING_HASH "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
/* The type's ros2msg definition (tracer_publisher_set_definition): what recorders decode with. */
#define STRING_DEFINITION "string data\n"
#define IMAGE_TYPE "sensor_msgs/msg/Image"
#define IMAGE_HASH "RIHS01_d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47"

typedef struct {
  uint8_t *buf;
  size_t cap;
  size_t pos; /* bytes written, the header included */
  int overflow;
} cdr_writer;

static inline void cdr_begin(cdr_writer *w, uint8_t *buf, size_t cap) {
  w->buf = buf;
  w->cap = cap;
  w->pos = 0;
  w->overflow = cap < 4;
  if (!w->overflow) {
    buf[0] = 0x00; buf[1] = 0x01; buf[2] = 0x00; buf[3] = 0x00; /* CDR_LE */
    w->pos = 4;
  }
}

static inline void cdr_align(cdr_writer *w, size_t n) {
  while ((w->pos - 4) % n != 0) {
    if (w->pos >= w->cap) { w->overflow = 1; return; }
    w->buf[w->pos++] = 0;
  }
}

static inline void cdr_raw(cdr_writer *w, const void *p, size_t n) {
  if (w->overflow || w->cap - w->pos < n) { w->overflow = 1; return; }
  memcpy(w->buf + w->pos, p, n);
  w->pos += n;
}

static inline void cdr_u8(cdr_writer *w, uint8_t v) { cdr_raw(w, &v, 1); }

static inline void cdr_u32(cdr_writer *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  cdr_align(w, 4);
  cdr_raw(w, b, 4);
}

static inline void cdr_u16(cdr_writer *w, uint16_t v) {
  uint8_t b[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
  cdr_align(w, 2);
  cdr_raw(w, b, 2);
}

static inline void cdr_u64(cdr_writer *w, uint64_t v) {
  uint8_t b[8];
  for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
  cdr_align(w, 8);
  cdr_raw(w, b, 8);
}

static inline void cdr_string(cdr_writer *w, const char *s) {
  uint32_t n = (uint32_t)strlen(s) + 1;
  cdr_u32(w, n);
  cdr_raw(w, s, n);
}

/* sensor_msgs/Image up to its data: header, height, width, encoding, is_bigendian, step, and
 * the data's length; the caller writes `data_len` bytes of pixels at w->buf + w->pos. */
/* std_msgs/msg/String "hello <i>" into buf (cap bytes); its CDR length (0: did not fit). */
static inline size_t cdr_hello(uint8_t *buf, size_t cap, int i) {
  char text[32];
  snprintf(text, sizeof text, "hello %d", i);
  cdr_writer w;
  cdr_begin(&w, buf, cap);
  cdr_string(&w, text);
  return w.overflow ? 0 : w.pos;
}

static inline void cdr_image_head(cdr_writer *w, int32_t sec, uint32_t nanosec, const char *frame,
                                  uint32_t height, uint32_t width, const char *encoding,
                                  uint32_t step, uint32_t data_len) {
  cdr_u32(w, (uint32_t)sec);
  cdr_u32(w, nanosec);
  cdr_string(w, frame);
  cdr_u32(w, height);
  cdr_u32(w, width);
  cdr_string(w, encoding);
  cdr_u8(w, 0);
  cdr_u32(w, step);
  cdr_u32(w, data_len);
}

/* Reading: a cursor over received CDR. */
typedef struct {
  const uint8_t *buf;
  size_t len;
  size_t pos;
  int bad;
} cdr_reader;

static inline void cdr_read_begin(cdr_reader *r, const uint8_t *buf, size_t len) {
  r->buf = buf;
  r->len = len;
  r->pos = 4;
  r->bad = len < 4 || buf[0] != 0x00 || buf[1] != 0x01;
}

static inline uint32_t cdr_read_u32(cdr_reader *r) {
  while (!r->bad && (r->pos - 4) % 4 != 0) r->pos++;
  if (r->bad || r->len < r->pos + 4) { r->bad = 1; return 0; }
  const uint8_t *b = r->buf + r->pos;
  r->pos += 4;
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static inline uint16_t cdr_read_u16(cdr_reader *r) {
  while (!r->bad && (r->pos - 4) % 2 != 0) r->pos++;
  if (r->bad || r->len < r->pos + 2) { r->bad = 1; return 0; }
  const uint8_t *b = r->buf + r->pos;
  r->pos += 2;
  return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint64_t cdr_read_u64(cdr_reader *r) {
  while (!r->bad && (r->pos - 4) % 8 != 0) r->pos++;
  if (r->bad || r->len < r->pos + 8) { r->bad = 1; return 0; }
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | r->buf[r->pos + (size_t)i];
  r->pos += 8;
  return v;
}

static inline uint8_t cdr_read_u8(cdr_reader *r) {
  if (r->bad || r->len < r->pos + 1) { r->bad = 1; return 0; }
  return r->buf[r->pos++];
}

/* A string in place (NUL-terminated within the sample), or NULL. */
static inline const char *cdr_read_string(cdr_reader *r) {
  uint32_t n = cdr_read_u32(r);
  if (r->bad || n == 0 || r->len - r->pos < n || r->buf[r->pos + n - 1] != 0) { r->bad = 1; return NULL; }
  const char *s = (const char *)(r->buf + r->pos);
  r->pos += n;
  return s;
}

#endif
