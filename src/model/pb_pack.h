/* pb_pack: protobuf-c messages serialized into a stream of buffers, byte for
 * byte as protobuf_c_message_pack() packs them.
 *
 * protobuf_c_message_pack() needs the whole output in one block, and packs
 * each nested message before its length, moving it once the length's size
 * is known: every byte of a node is moved once per level it sits under, and
 * the writer then copied the block again into its file buffer. Here the
 * sizes come first, in one walk that records the size of every nested
 * message in the order the packer meets them (4 bytes a message); the
 * packer then writes each field once, straight into the caller's buffer,
 * which it asks to flush or grow when it runs short. */
#ifndef RNNSTATE_MODEL_PB_PACK_H
#define RNNSTATE_MODEL_PB_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* The sizes of the messages to pack, in packing order (each message before
 * the messages inside it). A size that does not fit 32 bits is stored as
 * UINT32_MAX: the output is then larger than protobuf's 2 GiB limit and is
 * refused before anything is packed. */
typedef struct pb_sizes {
    uint32_t *size;
    size_t n, cap;
    size_t next; /* the next size the packer reads */
    bool oom;    /* an allocation failed: the sizes are incomplete */
} pb_sizes;

#define PB_SIZES_INIT { NULL, 0, 0, 0, false }

/* Records the sizes of m and of every message inside it, after those
 * recorded so far, and returns m's packed size (without a tag or length). */
uint64_t pb_sizes_add(pb_sizes *s, const ProtobufCMessage *m);
/* The same for the part of m that its fields [first, end) make, in
 * descriptor order (the order they are packed in), its unknown fields
 * included when `end` is the number of fields (so one part only may end
 * there): a message written in parts around a field the caller writes
 * itself (model_write.c: the initializers left in the source file). */
uint64_t pb_sizes_add_fields(pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                             unsigned end);
void pb_sizes_free(pb_sizes *s);

/* Where the packer writes: the free room [pos, end) of the caller's buffer. */
typedef struct pb_out pb_out;
struct pb_out {
    unsigned char *pos, *end;
    /* Makes at least `want` (at most PB_OUT_ROOM) bytes of room at pos,
     * flushing or growing the buffer; false stops the packing. */
    bool (*room)(pb_out *o, size_t want);
    /* Writes `size` bytes (any size) after pos's bytes; pos and end then
     * describe the room left. False stops the packing. */
    bool (*write)(pb_out *o, const void *data, size_t size);
};

/* The most room the packer asks for at once: a key and a varint value, or a
 * key and a length. */
#define PB_OUT_ROOM 32

/* Packs m's fields (not a length of its own), reading the sizes recorded by
 * pb_sizes_add() for m from s->next on. False when a callback failed. */
bool pb_pack(pb_out *o, pb_sizes *s, const ProtobufCMessage *m);
/* Packs the part of m sized by pb_sizes_add_fields() with the same range. */
bool pb_pack_fields(pb_out *o, pb_sizes *s, const ProtobufCMessage *m, unsigned first,
                    unsigned end);
/* The index in m's descriptor of the field numbered `id`, or the number of
 * fields when there is none. */
unsigned pb_field_index(const ProtobufCMessageDescriptor *d, uint32_t id);

#endif
