// A set of action sequences of varying length: one 64-bit code and a length per sequence
// (10 bytes each), decoded when asked for. Prefixes share the storage of the whole set.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "data/length_stream.hpp"

namespace induct {

class SequenceSet {
 public:
  SequenceSet() : storage_(std::make_shared<Storage>()) {}

  size_t size() const { return size_; }
  int length(size_t i) const { return storage_->lengths[i]; }
  uint64_t code(size_t i) const { return storage_->codes[i]; }
  // Writes the length(i) actions of sequence i.
  void decode(size_t i, int32_t* out) const {
    storage_->codecs[storage_->lengths[i]].decode(storage_->codes[i], out);
  }
  std::vector<int32_t> sequence(size_t i) const {
    std::vector<int32_t> out(static_cast<size_t>(length(i)));
    decode(i, out.data());
    return out;
  }

  // Appends the sequence `code` of `codec`'s length. Not on a set whose storage is shared.
  void add(const SequenceCodec& codec, uint64_t code) {
    Storage& s = *storage_;
    if (size_ != s.codes.size() || storage_.use_count() != 1)
      throw std::logic_error("SequenceSet: add to a shared set");
    if (codec.length() > kMaxLength) throw std::invalid_argument("SequenceSet: sequence too long");
    if (s.codecs.size() <= static_cast<size_t>(codec.length())) s.codecs.resize(codec.length() + 1);
    s.codecs[codec.length()] = codec;
    s.codes.push_back(code);
    s.lengths.push_back(static_cast<uint16_t>(codec.length()));
    ++size_;
  }
  // The first n sequences (n <= size()), sharing this set's storage.
  SequenceSet prefix(size_t n) const {
    if (n > size_) throw std::invalid_argument("SequenceSet: prefix longer than the set");
    SequenceSet view(*this);
    view.size_ = n;
    return view;
  }
  // Memory held by the whole storage.
  size_t bytes() const {
    return storage_->codes.capacity() * sizeof(uint64_t) +
           storage_->lengths.capacity() * sizeof(uint16_t);
  }
  void reserve(size_t n) {
    storage_->codes.reserve(n);
    storage_->lengths.reserve(n);
  }

  static constexpr int kMaxLength = UINT16_MAX;

 private:
  struct Storage {
    std::vector<uint64_t> codes;
    std::vector<uint16_t> lengths;
    std::vector<SequenceCodec> codecs;  // by length
  };
  std::shared_ptr<Storage> storage_;
  size_t size_ = 0;
};

}  // namespace induct
