import React from "react";

type Props = { title: string };

export function Header({ title }: Props) {
  const [open, setOpen] = React.useState(false);
  return (
    <header onClick={() => setOpen(!open)}>
      <h1>{title}</h1>
    </header>
  );
}

export const Footer = (p: Props) => {
  return <footer>{p.title}</footer>;
};
