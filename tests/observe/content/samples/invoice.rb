require "json"

module Billing
  class Invoice
    attr_reader :lines

    def initialize(lines)
      @lines = lines
    end

    def total
      lines.sum do |l|
        l.price * l.qty
      end
    end

    def self.load(path)
      new(JSON.parse(File.read(path)))
    end
  end
end
