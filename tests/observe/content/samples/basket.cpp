#include <vector>
#include <string>

namespace shop {

template <typename T>
class Basket {
public:
    Basket() = default;
    void add(const T& item) {
        items_.push_back(item);
    }
    size_t size() const { return items_.size(); }
private:
    std::vector<T> items_;
};

int total(const std::vector<int>& xs) {
    int t = 0;
    for (int x : xs) t += x;
    return t;
}

}  // namespace shop
