// JPEG and PNG decoding (media/image.h). Both libraries report errors by
// longjmp: each library call runs in a small function that owns nothing with
// a destructor (so a jump skips none), and the caller turns its error into
// tessera::Error.
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

#include <jpeglib.h>
#include <jerror.h>  // after jpeglib.h: the message codes
#include <png.h>

#include "core/error.h"
#include "media/image.h"

namespace tessera {

namespace {

constexpr const char* kWhere = "image";

void check_size(int64_t width, int64_t height, const ImageLimits& limits) {
  if (width <= 0 || height <= 0) fail(kWhere, "size", "{} × {} pixels: empty", width, height);
  if (width > limits.max_side || height > limits.max_side || width * height > limits.max_pixels)
    fail(kWhere, "size", "{} × {} pixels is over the limit ({} pixels, {} a side)", width, height, limits.max_pixels,
         limits.max_side);
}

// ---- JPEG -----------------------------------------------------------------

struct JpegError {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
  auto* error = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, error->message);
  std::longjmp(error->jump, 1);
}

// Warnings (a corrupt but readable scan) are not errors, but for one: data
// that ends before the end-of-image marker, which libjpeg would pad with
// gray and Pillow refuses as truncated.
void jpeg_warning(j_common_ptr cinfo, int level) {
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) {
    auto* error = reinterpret_cast<JpegError*>(cinfo->err);
    std::snprintf(error->message, sizeof error->message, "the file ends early (truncated)");
    std::longjmp(error->jump, 1);
  }
}

// Reads the header and starts decompression as RGB; false on a library error.
bool jpeg_start(jpeg_decompress_struct* cinfo, JpegError* error, const uint8_t* data, size_t size) {
  if (setjmp(error->jump)) return false;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    std::snprintf(error->message, sizeof error->message, "CMYK / YCCK JPEG is not supported");
    return false;
  }
  cinfo->out_color_space = JCS_RGB;  // grayscale too: libjpeg replicates it
  return true;
}

bool jpeg_rows(jpeg_decompress_struct* cinfo, JpegError* error, uint8_t* pixels) {
  if (setjmp(error->jump)) return false;
  jpeg_start_decompress(cinfo);
  const size_t stride = size_t{cinfo->output_width} * 3;
  while (cinfo->output_scanline < cinfo->output_height) {
    JSAMPROW row = pixels + size_t{cinfo->output_scanline} * stride;
    jpeg_read_scanlines(cinfo, &row, 1);
  }
  jpeg_finish_decompress(cinfo);
  return true;
}

RgbImage decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  jpeg_decompress_struct cinfo{};
  JpegError error{};
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jpeg_error_exit;
  error.manager.emit_message = jpeg_warning;
  struct Destroy {
    jpeg_decompress_struct* c;
    ~Destroy() { jpeg_destroy_decompress(c); }
  } destroy{&cinfo};
  if (!jpeg_start(&cinfo, &error, bytes.data(), bytes.size())) fail(kWhere, "JPEG", "{}", error.message);
  check_size(cinfo.image_width, cinfo.image_height, limits);
  RgbImage image;
  image.width = cinfo.image_width;
  image.height = cinfo.image_height;
  image.pixels.resize(static_cast<size_t>(image.width * image.height * 3));
  if (!jpeg_rows(&cinfo, &error, image.pixels.data())) fail(kWhere, "JPEG", "{}", error.message);
  return image;
}

// ---- PNG ------------------------------------------------------------------

struct PngInput {
  const uint8_t* data;
  size_t size, at;
  char message[256];
};

void png_read_bytes(png_structp png, png_bytep out, size_t n) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  if (n > in->size - in->at) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, in->data + in->at, n);
  in->at += n;
}

void png_on_error(png_structp png, png_const_charp message) {
  auto* in = static_cast<PngInput*>(png_get_io_ptr(png));
  std::snprintf(in->message, sizeof in->message, "%s", message);
  png_longjmp(png, 1);
}

void png_on_warning(png_structp, png_const_charp) {}

// Reads the header and sets the transforms to 8-bit RGB; false on error.
bool png_start(png_structp png, png_infop info, const ImageLimits& limits) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_chunk_malloc_max(png, 8u << 20);  // compressed text and other chunks: no bombs
  png_read_info(png, info);
  // Before any row buffer: a size over the caps is our error, not libpng's.
  check_size(png_get_image_width(png, info), png_get_image_height(png, info), limits);
  const int color = png_get_color_type(png, info);
  if (png_get_bit_depth(png, info) == 16) png_set_strip_16(png);  // the high byte, as Pillow's RGB;16B
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(png);
    png_set_gray_to_rgb(png);
  }
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return png_get_rowbytes(png, info) == size_t{png_get_image_width(png, info)} * 3;
}

bool png_rows(png_structp png, png_infop info, uint8_t* pixels, int64_t width, int64_t height) {
  if (setjmp(png_jmpbuf(png))) return false;
  // Interlaced images need every row at once: row pointers into `pixels`.
  const int passes = png_set_interlace_handling(png);
  for (int pass = 0; pass < passes; ++pass)
    for (int64_t y = 0; y < height; ++y) png_read_row(png, pixels + y * width * 3, nullptr);
  png_read_end(png, nullptr);
  (void)info;
  return true;
}

RgbImage decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  // IHDR is the first chunk (width, height big-endian at bytes 16 and 20):
  // its size is checked before libpng reads any further.
  if (bytes.size() >= 24 && std::memcmp(bytes.data() + 12, "IHDR", 4) == 0) {
    auto be32 = [&](size_t at) {
      return int64_t{bytes[at]} << 24 | int64_t{bytes[at + 1]} << 16 | int64_t{bytes[at + 2]} << 8 | bytes[at + 3];
    };
    check_size(be32(16), be32(20), limits);
  }
  PngInput input{bytes.data(), bytes.size(), 0, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &input, png_on_error, png_on_warning);
  if (!png) fail(kWhere, "PNG", "cannot start the decoder");
  png_infop info = png_create_info_struct(png);
  struct Destroy {
    png_structp* p;
    png_infop* i;
    ~Destroy() { png_destroy_read_struct(p, i, nullptr); }
  } destroy{&png, &info};
  if (!info) fail(kWhere, "PNG", "cannot start the decoder");
  png_set_read_fn(png, &input, png_read_bytes);
  if (!png_start(png, info, limits)) fail(kWhere, "PNG", "{}", input.message[0] ? input.message : "unsupported pixel format");
  RgbImage image;
  image.width = png_get_image_width(png, info);
  image.height = png_get_image_height(png, info);
  image.pixels.resize(static_cast<size_t>(image.width * image.height * 3));
  if (!png_rows(png, info, image.pixels.data(), image.width, image.height)) fail(kWhere, "PNG", "{}", input.message);
  return image;
}

}  // namespace

RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) return decode_jpeg(bytes, limits);
  if (bytes.size() >= 8 && std::memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes, limits);
  fail(kWhere, "format", "{}", bytes.empty() ? "no bytes" : "not a JPEG or PNG file (by its signature)");
}

}  // namespace tessera
