package inventory

import (
	"errors"
	"fmt"
)

var ErrNotFound = errors.New("not found")

type Item struct {
	SKU   string
	Count int
}

type Store interface {
	Get(sku string) (Item, error)
}

func NewItem(sku string) Item {
	return Item{SKU: sku}
}

func (i *Item) Add(n int) error {
	if n < 0 {
		return fmt.Errorf("negative: %d", n)
	}
	i.Count += n
	return nil
}
