package com.example;

import java.util.List;
import java.util.ArrayList;

public class Inventory {
    private final List<String> items = new ArrayList<>();

    public Inventory() {
        super();
    }

    @Override
    public String toString() {
        return String.join(",", items);
    }

    public void add(String item) {
        if (item == null) {
            throw new IllegalArgumentException("null");
        }
        items.add(item);
    }

    enum Kind { A, B }
}
